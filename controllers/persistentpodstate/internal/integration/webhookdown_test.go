package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/webhook"
)

// recordedWeb runs StatefulSet web (one pod) with its PersistentPodState
// on two zones' nodes, and returns the recorded pod once the webhook's
// scope holds it.
func recordedWeb(t *testing.T, policy admissionregistrationv1.FailurePolicyType) (*harness, corev1.Pod) {
	h := newHarness(t)
	h.policy = policy
	h.nodes("zone-a", "zone-b")
	h.start()
	h.statefulSet("web", 1, nil)
	h.states.Create(persistentPodState("web", "apps/v1", "web", 100))
	pods := h.waitReady("web", "web-0")
	h.waitRecords("web", pods)
	waitScopeNames(t, h, "web-0")
	return h, pods[0]
}

// failurePolicy Ignore, webhook down: the recreated pod comes up without
// its topology (on another zone, its node cordoned) and the controller
// reports it: a Warning event and PersistentTopologyInjected=False on the
// PersistentPodState.
func TestWebhookDownIgnore(t *testing.T) {
	h, old := recordedWeb(t, admissionregistrationv1.Ignore)
	h.stopWH()
	h.Nodes().Modify(old.Spec.NodeName, func(n *corev1.Node) { n.Spec.Unschedulable = true })

	h.deletePod("web-0")
	pod := h.recreated("web-0", old.UID, true)
	assert.Empty(t, pod.Spec.NodeSelector[zoneKey], "created without the recorded topology")
	assert.NotEqual(t, old.Spec.NodeName, pod.Spec.NodeName)

	ev := h.WaitEvent("web", controller.ReasonNotInjected)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, "web-0")
	p := h.states.WaitFor("web", "PersistentTopologyInjected False", func(p *appsv1alpha1.PersistentPodState) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, controller.ConditionInjected)
	})
	assert.Equal(t, controller.ReasonNotInjected, meta.FindStatusCondition(p.Status.Conditions, controller.ConditionInjected).Reason)
}

// failurePolicy Fail, webhook down: only the pods the feature concerns are
// blocked — the recorded pod cannot be recreated (kube-controller-manager
// reports the webhook's failure), while an unrelated pod and a pod of
// another StatefulSet are created as usual; once the webhook is back, the
// pod is recreated with its topology.
func TestWebhookDownFail(t *testing.T) {
	h, old := recordedWeb(t, admissionregistrationv1.Fail)
	h.stopWH()

	h.deletePod("web-0")
	ev := h.WaitEvent("web", "FailedCreate")
	assert.Contains(t, ev.Message, webhook.PodWebhookName)

	h.statefulSet("other", 1, nil)
	h.waitReady("other", "other-0")
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}, TerminationGracePeriodSeconds: ptr.To(int64(0))},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "an unrelated pod is not blocked")

	// Back up, the recorded pod is recreated with its topology.
	h.startWebhook()
	pod := h.recreated("web-0", old.UID, false)
	assert.Equal(t, "web", pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
}
