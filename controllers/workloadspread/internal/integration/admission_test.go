package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// Bad WorkloadSpreads are refused naming the field: by the CRD's schema and
// CEL (no webhook needed) or by the validating webhook (percent sum, a
// second WorkloadSpread on one workload).
func TestBadInputRefused(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.cloneSet("taken", 1)
	h.spreads.Create(newSpread("first", "apps.kruise.io/v1alpha1", "CloneSet", "taken", subset("a", "zone-0", "")))
	h.spreads.WaitFor("first", "in the webhook's cache (status written)", func(w *appsv1alpha1.WorkloadSpread) bool { return len(w.Status.SubsetStatuses) == 1 })
	cs := "apps.kruise.io/v1alpha1"
	lab.RefusedAtAdmission(t, h.Client.AppsV1alpha1().WorkloadSpreads(h.NS).Create, []lab.Refusal[*appsv1alpha1.WorkloadSpread]{
		{Name: "duplicate subset names", Object: newSpread("dup", cs, "CloneSet", "x", subset("a", "zone-0", "1"), subset("a", "zone-1", "")),
			Want: "spec.subsets[1]: Duplicate value"},
		{Name: "maxReplicas over 100%", Object: newSpread("over", cs, "CloneSet", "x", subset("a", "zone-0", "150%")),
			Want: "spec.subsets[0].maxReplicas"},
		{Name: "percent sum over 100%", Object: newSpread("sum", cs, "CloneSet", "x", subset("a", "zone-0", "60%"), subset("b", "zone-1", "50%")),
			Want: "spec.subsets[1].maxReplicas: Invalid value: \"50%\": the sum of all subset's maxReplicas exceeds 100% is no permitted"},
		{Name: "unsupported target kind", Object: newSpread("kind", "apps/v1", "DaemonSet", "x", subset("a", "zone-0", "")),
			Want: "spec.targetRef: Invalid value"},
		{Name: "second WorkloadSpread on one workload", Object: newSpread("second", cs, "CloneSet", "taken", subset("a", "zone-0", "")),
			Want: "spec.targetRef: Invalid value: \"CloneSet/taken\": ws.spec.targetRef is in conflict with other WorkloadSpread first"},
	})
	_, err := h.Client.AppsV1alpha1().WorkloadSpreads(h.NS).Patch(context.Background(), "first", "application/merge-patch+json",
		[]byte(`{"spec":{"targetRef":{"name":"other"}}}`), metav1.PatchOptions{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "change TargetReference is not permitted for WorkloadSpread")
}

// A placed pod's deletion is recorded in its subset's deletingPods (its
// place is free at once, before the pod is gone), as OpenKruise's pod
// validating webhook does; the reconciler drops the entry once the pod is
// gone. Seen through a watch on the WorkloadSpread.
func TestDeletionRecorded(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.cloneSet("del", 2)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "del", subset("a", "zone-0", "2"), subset("b", "zone-1", "")))
	h.waitInScope("ws")
	ctx := context.Background()
	pods := h.Env.Kube.CoreV1().Pods(h.NS)
	for _, n := range []string{"del-0", "del-1"} {
		p, err := pods.Create(ctx, ownedPod(cs, n), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, "a", subsetOf(p))
	}
	w := h.spreads.WaitFor("ws", "a: 2 replicas seen, full", func(w *appsv1alpha1.WorkloadSpread) bool {
		s := subsetStatus(w, "a")
		return s.Replicas == 2 && s.MissingReplicas == 0 && len(s.CreatingPods) == 0
	})
	watch, err := h.Client.AppsV1alpha1().WorkloadSpreads(h.NS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=ws", ResourceVersion: w.ResourceVersion})
	require.NoError(t, err)
	defer watch.Stop()
	require.NoError(t, pods.Delete(ctx, "del-0", metav1.DeleteOptions{}))
	deadline := time.After(waitTimeout)
	for recorded := false; !recorded; {
		select {
		case ev := <-watch.ResultChan():
			if got, ok := ev.Object.(*appsv1alpha1.WorkloadSpread); ok {
				s := subsetStatus(got, "a")
				_, recorded = s.DeletingPods["del-0"]
				if recorded {
					assert.Equal(t, int32(1), s.MissingReplicas, "the place is free at once")
				}
			}
		case <-deadline:
			t.Fatal("del-0 never appeared in deletingPods")
		}
	}
	p, err := pods.Create(ctx, ownedPod(cs, "del-2"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", subsetOf(p), "the replacement takes the freed place")
	h.spreads.WaitFor("ws", "deletingPods cleared once del-0 is gone", func(w *appsv1alpha1.WorkloadSpread) bool {
		s := subsetStatus(w, "a")
		return len(s.DeletingPods) == 0 && s.Replicas == 2
	})
}

// failurePolicy Ignore with the webhook down: the target's pods are created
// without a subset, and the reconciler reports it (Warning event and
// PodsPlaced=False naming the pod).
func TestWebhookDownIgnore(t *testing.T) {
	h := newHarness(t)
	h.policy = admissionregistrationv1.Ignore
	h.start()
	cs := h.cloneSet("ign", 1)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "ign", subset("a", "zone-0", "")))
	h.waitInScope("ws")
	h.stopWH()
	p, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), ownedPod(cs, "ign-0"), metav1.CreateOptions{})
	require.NoError(t, err, "Ignore: created")
	assert.Empty(t, subsetOf(p), "without the feature")
	h.spreads.WaitFor("ws", "PodsPlaced=False naming ign-0", func(w *appsv1alpha1.WorkloadSpread) bool {
		for _, c := range w.Status.Conditions {
			if c.Type == controller.PodsPlacedCondition && c.Status == metav1.ConditionFalse && c.Reason == "WebhookMissed" {
				return strings.Contains(c.Message, "ign-0")
			}
		}
		return false
	})
	e := h.WaitEvent("ws", "WebhookMissed")
	assert.Equal(t, corev1.EventTypeWarning, e.Type)
}

// failurePolicy Fail with the webhook down: only the pods the feature
// concerns are refused; others are created.
func TestWebhookDownFail(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.cloneSet("fail", 1)
	other := h.cloneSet("free", 1)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "fail", subset("a", "zone-0", "")))
	h.waitInScope("ws")
	h.stopWH()
	ctx := context.Background()
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, ownedPod(cs, "fail-0"), metav1.CreateOptions{})
	require.Error(t, err, "Fail: a pod of the target is refused")
	assert.ErrorContains(t, err, "subset.pods.workloadspread.flotilla.dev")
	_, err = h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, ownedPod(other, "free-0"), metav1.CreateOptions{})
	require.NoError(t, err, "a pod no WorkloadSpread concerns is created")
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(ctx, "free-0", metav1.DeleteOptions{}), "deletions never wait on it")
}
