package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Item 9: the controller is killed (its context cancelled, which aborts
// in-flight requests mid-sync, and all its memory — caches, expectations,
// queue — discarded) several times during a scale-up and during an in-place
// rollout, and a fresh one started each time. A watcher running for the whole
// test checks at every pod event: never more than replicas+maxSurge pods,
// never fewer than replicas−maxUnavailable ready once reached, no pod deleted
// unless it was surplus (the surge pod's counterpart at the end of the
// rollout; scale-up and in-place update delete nothing), and the rollout
// completes.
func TestCrashSafety(t *testing.T) {
	const replicas = 10
	h := newHarness(t)
	w := h.watchInvariants("crash", invariants{
		maxPods:  replicas + 1,
		minReady: replicas - 2,
		// Only a surplus pod (the surge) may go.
		mayDelete: func(_ *corev1.Pod, liveBefore int) bool { return liveBefore > replicas },
	})
	stop := h.startController()
	h.create(newCloneSet("crash", replicas, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		cs.Spec.MinReadySeconds = 1
	}))

	restarts := 0
	killWhen := func(what string, cond func([]corev1.Pod) bool) {
		t.Helper()
		h.KillWhen(what, func() bool { return cond(h.pods("crash")) }, &stop, h.startController)
		restarts++
	}
	for _, n := range []int{2, 5, 8} {
		killWhen("scale-up", func(ps []corev1.Pod) bool { return len(ps) >= n })
	}
	h.waitPods("crash", "10 ready", allReady(replicas))
	// Start the rollout from a CloneSet whose pods are all available: a pod
	// not yet ready for minReadySeconds already counts as unavailable, and
	// updating it costs no budget (as in OpenKruise).
	h.waitStatus("crash", "10 available", func(s appsv1alpha1.CloneSetStatus) bool { return s.AvailableReplicas == replicas })

	h.modify("crash", setImage(imageV2))
	for _, n := range []int{1, 4, 7} {
		killWhen("in-place rollout", func(ps []corev1.Pod) bool { return countImage(ps, imageV2) >= n })
	}
	pods := h.waitPods("crash", "all on v2", func(ps []corev1.Pod) bool { return allReady(replicas)(ps) && allImage(ps, imageV2) })
	h.waitStatus("crash", "settled on v2", settled(replicas))
	w.waitCaughtUp(h, "crash")
	w.check(t)
	assert.LessOrEqual(t, len(w.deletedPods()), 1, "at most the surplus pod")
	assert.Len(t, pods, replicas)
	assert.Equal(t, 6, restarts)
}
