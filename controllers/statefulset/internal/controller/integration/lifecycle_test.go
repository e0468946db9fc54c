package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func withHook(kind string, markPodNotReady bool) func(*appsv1beta1.StatefulSet) {
	return func(set *appsv1beta1.StatefulSet) {
		lab.AddHook(&set.Spec.Lifecycle, set.Spec.Template.Labels, kind, markPodNotReady)
	}
}

// TestPreDeleteHookMarkPodNotReady: the condemned pod waits in
// PreparingDelete, NotReady through the KruisePodReady gate the controller
// injected, until its hook is released; only then is it deleted.
func TestPreDeleteHookMarkPodNotReady(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("pd", 2, withHook("preDelete", true)))
	lab.CheckKruisePodReady(t, h.waitPods("pd", "2 ready", readyNames("pd-0", "pd-1")), "gate injected for markPodNotReady")
	h.modify("pd", func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	h.waitPods("pd", "pd-1 PreparingDelete and NotReady", func(ps []corev1.Pod) bool {
		return len(ps) == 2 && lab.PreparingDeleteNotReady(&ps[1])
	})
	h.HeldWhileHooked(func() []corev1.Pod { return h.pods("pd") }, "pd-1")
	h.Release("pd-1")
	h.waitPods("pd", "pd-1 deleted once released", readyNames("pd-0"))
}

// TestInPlaceUpdateHook: PreparingUpdate (NotReady) until released, then
// updated in place, Updated until the hook is re-applied, then Normal.
func TestInPlaceUpdateHook(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("iu", 1, inPlaceReady, withHook("inPlaceUpdate", true), rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
		r.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
	})))
	pod := h.waitPods("iu", "ready", readyNames("iu-0"))[0]
	log := h.watchStates("iu", "iu-0")
	h.modify("iu", setImage(imageV2))
	h.waitPods("iu", "PreparingUpdate, NotReady, image unchanged", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && lab.State(ps[0]) == string(pub.LifecycleStatePreparingUpdate) && !podReady(&ps[0]) && ps[0].Spec.Containers[0].Image == imageV1
	})
	h.Release("iu-0")
	h.waitPods("iu", "updated, waiting in Updated for the hook", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Spec.Containers[0].Image == imageV2 && lab.State(ps[0]) == string(pub.LifecycleStateUpdated)
	})
	h.Hook("iu-0")
	final := h.waitPods("iu", "Normal and ready", func(ps []corev1.Pod) bool {
		return readyNames("iu-0")(ps) && lab.State(ps[0]) == string(pub.LifecycleStateNormal)
	})
	assert.Equal(t, pod.UID, final[0].UID, "updated in place")
	log.wait(t, "Normal", "PreparingUpdate", "Updating", "Updated", "Normal")
	h.waitStatus("iu", "settled", settled(1))
}

// watchStates records the lifecycle states a pod goes through.
func (h *harness) watchStates(set, pod string) *podLog {
	l := &podLog{entries: []string{"Normal"}}
	h.onPodEvents(set, func(_ watch.EventType, p *corev1.Pod) {
		if p.Name != pod {
			return
		}
		l.mu.Lock()
		if s := lab.State(*p); len(l.entries) == 0 || l.entries[len(l.entries)-1] != s {
			l.entries = append(l.entries, s)
		}
		l.mu.Unlock()
	})
	return l
}

// TestPreNormalHook: with a preNormal hook new pods start PreparingNormal
// and become Normal once the hook is all applied.
func TestPreNormalHook(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("pn", 1, withHook("preNormal", false)))
	h.waitPods("pn", "running, PreparingNormal", func(ps []corev1.Pod) bool {
		return readyNames("pn-0")(ps) && lab.State(ps[0]) == string(pub.LifecycleStatePreparingNormal)
	})
	h.Hook("pn-0")
	h.waitPods("pn", "Normal", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && lab.State(ps[0]) == string(pub.LifecycleStateNormal)
	})
}

var condStatus = testenv.ConditionStatus

// TestMarkPodNotReadyAddedLater: KruisePodReady is on every pod, so a
// preDelete hook with markPodNotReady set after the pods exist still takes
// the condemned pod out of Service endpoints while it waits.
func TestMarkPodNotReadyAddedLater(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("later", 2, func(s *appsv1beta1.StatefulSet) { s.Spec.Template.Labels[lab.HookLabel] = "true" }))
	lab.CheckKruisePodReady(t, h.waitPods("later", "2 ready", readyNames("later-0", "later-1")), "gate on every pod")
	h.modify("later", func(s *appsv1beta1.StatefulSet) {
		s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{lab.HookLabel: "true"}, MarkPodNotReady: true}}
		s.Spec.Replicas = ptr.To[int32](1)
	})
	h.waitPods("later", "later-1 PreparingDelete and NotReady", func(ps []corev1.Pod) bool {
		return len(ps) == 2 && lab.PreparingDeleteNotReady(&ps[1])
	})
	h.Release("later-1")
	h.waitPods("later", "later-1 deleted once released", readyNames("later-0"))
}
