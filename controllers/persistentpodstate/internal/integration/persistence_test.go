package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/webhook"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// A pod of an apps/v1 StatefulSet deleted and recreated by
// kube-controller-manager comes back with its recorded zone required
// (nodeSelector) and its recorded host preferred with the spec's weight,
// and is scheduled into that zone; the webhook is called for it and for no
// other pod (an unrelated pod, another StatefulSet's pod, a pod of the
// same StatefulSet never recorded).
func TestRecreatedPodKeepsTopology(t *testing.T) {
	h := newHarness(t)
	h.nodes("zone-a", "zone-a", "zone-b")
	h.start()
	assert.Equal(t, kitwebhook.Never, h.scopeExpr(), "no PersistentPodState: the webhook is never called")

	h.statefulSet("web", 2, nil)
	h.states.Create(persistentPodState("web", "apps/v1", "web", 60))
	pods := h.waitReady("web", podNames("web", 2)...)
	pps := h.waitRecords("web", pods)
	recorded := pps.Status.PodStates["web-0"]
	h.states.WaitFor("web", "WebhookInScope True", func(p *appsv1alpha1.PersistentPodState) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, kitwebhook.InScopeCondition)
	})
	waitScopeNames(t, h, "web-0", "web-1")

	// Unrelated pods never reach the webhook.
	before := h.wh.Requests(webhook.HandlerName)
	h.statefulSet("other", 1, nil)
	h.waitReady("other", "other-0")
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0x", Labels: map[string]string{"app": "loose", "statefulset.kubernetes.io/pod-name": "web-0"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}, TerminationGracePeriodSeconds: ptr.To(int64(0))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.sets.Modify("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To(int32(3)) })
	h.waitReady("web", podNames("web", 3)...)
	assert.Equal(t, before, h.wh.Requests(webhook.HandlerName), "unrelated pods and first creations: 0 webhook calls")

	old := pods[0]
	h.deletePod("web-0")
	pod := h.recreated("web-0", old.UID, true)
	assert.Equal(t, before+1, h.wh.Requests(webhook.HandlerName), "the recreated pod: one call")
	assert.Equal(t, "web", pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
	assert.Equal(t, recorded.NodeTopologyLabels[zoneKey], pod.Spec.NodeSelector[zoneKey], "the recorded zone is required")
	require.NotNil(t, pod.Spec.Affinity)
	require.NotNil(t, pod.Spec.Affinity.NodeAffinity)
	assert.Equal(t, []corev1.PreferredSchedulingTerm{{Weight: 60, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: hostKey, Operator: corev1.NodeSelectorOpIn, Values: []string{recorded.NodeName}}}}}},
		pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "the recorded host is preferred with the spec's weight")
	assert.Equal(t, recorded.NodeTopologyLabels[zoneKey], h.zones[pod.Spec.NodeName], "scheduled into the recorded zone")
	h.states.WaitFor("web", "PersistentTopologyInjected True", func(p *appsv1alpha1.PersistentPodState) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, "PersistentTopologyInjected")
	})
}

// Scaling the StatefulSet in drops the records of the ordinals it removed,
// once their pods are gone; the remaining ones are kept.
func TestScaleInDropsRecords(t *testing.T) {
	h := newHarness(t)
	h.nodes("zone-a", "zone-b")
	h.start()
	h.statefulSet("db", 3, nil)
	h.states.Create(persistentPodState("db", "apps/v1", "db", 100))
	pods := h.waitReady("db", podNames("db", 3)...)
	h.waitRecords("db", pods)

	h.sets.Modify("db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To(int32(1)) })
	pods = h.waitReady("db", "db-0")
	h.waitRecords("db", pods)

	// Deleting the StatefulSet drops every record.
	require.NoError(t, h.Env.Kube.AppsV1().StatefulSets(h.NS).Delete(context.Background(), "db", metav1.DeleteOptions{}))
	h.states.WaitFor("db", "no records", func(p *appsv1alpha1.PersistentPodState) bool { return len(p.Status.PodStates) == 0 })
}

// waitScopeNames waits until the webhook's match condition names the pods.
func waitScopeNames(t *testing.T, h *harness, names ...string) {
	t.Helper()
	testenvEventuallyContains(t, h, names)
}
