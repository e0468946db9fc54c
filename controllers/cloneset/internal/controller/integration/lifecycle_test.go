package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func withHook(kind string, markPodNotReady bool) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) {
		lab.AddHook(&cs.Spec.Lifecycle, cs.Spec.Template.Labels, kind, markPodNotReady)
	}
}

// Item 4: preDelete with markPodNotReady: a scaled-in pod waits in
// PreparingDelete, NotReady through KruisePodReady, until its hook is
// released; only then is it deleted.
func TestPreDeleteHookMarkPodNotReady(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("pd", 2, withHook("preDelete", true)))
	lab.CheckKruisePodReady(t, h.waitPods("pd", "2 ready", allReady(2)), "gate injected for markPodNotReady")
	h.modify("pd", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(1)) })
	waiting := h.waitPods("pd", "one pod PreparingDelete and NotReady", func(ps []corev1.Pod) bool {
		pd := lab.InState(ps, pub.LifecycleStatePreparingDelete)
		return len(ps) == 2 && len(pd) == 1 && lab.PreparingDeleteNotReady(&pd[0])
	})
	victim := lab.InState(waiting, pub.LifecycleStatePreparingDelete)[0]
	kp := podCondition(&victim, pub.KruisePodReadyConditionType)
	assert.Contains(t, kp.Message, `"userAgent":"Lifecycle"`)
	assert.Contains(t, kp.Message, `"key":"preDeleteHook"`)
	h.HeldWhileHooked(func() []corev1.Pod { return h.pods("pd") }, victim.Name)
	h.Release(victim.Name)
	after := h.waitPods("pd", "victim deleted", func(ps []corev1.Pod) bool { return len(ps) == 1 && !slices.Contains(names(ps), victim.Name) })
	assert.Equal(t, string(pub.LifecycleStateNormal), after[0].Labels[pub.LifecycleStateKey])
}

// Item 4: inPlaceUpdate hook: PreparingUpdate (NotReady) until released,
// then Updating, then Updated until the hook is re-applied, then Normal.
func TestInPlaceUpdateHook(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("iu", 1, withHook("inPlaceUpdate", true), strategy(appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)))
	pod := h.waitPods("iu", "ready", allReady(1))[0]
	w := h.watchInvariants("iu", invariants{})
	h.modify("iu", setImage(imageV2))
	h.waitPods("iu", "PreparingUpdate, NotReady, image unchanged", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate) &&
			!podReady(&ps[0]) && ps[0].Spec.Containers[0].Image == imageV1
	})
	h.Release(pod.Name)
	h.waitPods("iu", "updated, waiting in Updated for the hook", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Spec.Containers[0].Image == imageV2 && ps[0].Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateUpdated)
	})
	h.Hook(pod.Name)
	final := h.waitPods("iu", "Normal and ready", func(ps []corev1.Pod) bool {
		return allReady(1)(ps) && ps[0].Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal)
	})
	assert.Equal(t, pod.UID, final[0].UID)
	w.waitCaughtUp(h, "iu")
	var states []string
	for _, v := range w.versions(pod.Name) {
		if s := v.Labels[pub.LifecycleStateKey]; len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
	}
	assert.Equal(t, []string{"Normal", "PreparingUpdate", "Updating", "Updated", "Normal"}, states)
}

// Item 4: preNormal: a new pod stays PreparingNormal (unavailable) until the
// hook is all applied.
func TestPreNormalHook(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("pn", 1, withHook("preNormal", false)))
	pods := h.waitPods("pn", "running, PreparingNormal", func(ps []corev1.Pod) bool {
		return allReady(1)(ps) && ps[0].Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingNormal)
	})
	st := h.waitStatus("pn", "ready but not available", func(s appsv1alpha1.CloneSetStatus) bool { return s.ReadyReplicas == 1 })
	assert.Equal(t, int32(0), st.Status.AvailableReplicas, "PreparingNormal is not available")
	h.Hook(pods[0].Name)
	h.waitPods("pn", "Normal", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal)
	})
	h.waitStatus("pn", "available", func(s appsv1alpha1.CloneSetStatus) bool { return s.AvailableReplicas == 1 })
}

// Item 4 (v1.3 seed): the three PreparingDelete scaling cases, without and
// with apps.kruise.io/cloneset-scaling-exclude-preparing-delete.
func TestPreparingDeleteScaling(t *testing.T) {
	for _, exclude := range []bool{false, true} {
		mode := map[bool]string{false: "default", true: "exclude"}[exclude]
		setup := func(t *testing.T, name string) (*harness, []corev1.Pod) {
			h := newHarness(t)
			h.startController()
			h.create(newCloneSet(name, 3, withHook("preDelete", false), func(cs *appsv1alpha1.CloneSet) {
				if exclude {
					cs.Labels = map[string]string{pub.CloneSetScalingExcludePreparingDeleteKey: "true"}
				}
			}))
			return h, h.waitPods(name, "3 ready", allReady(3))
		}
		preparing := func(h *harness, name string) []corev1.Pod {
			return lab.InState(h.pods(name), pub.LifecycleStatePreparingDelete)
		}
		t.Run(mode+"/scale in then back", func(t *testing.T) {
			h, pods := setup(t, "back")
			h.modify("back", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(2)) })
			h.waitPods("back", "one PreparingDelete", func(ps []corev1.Pod) bool { return len(lab.InState(ps, pub.LifecycleStatePreparingDelete)) == 1 })
			victim := preparing(h, "back")[0]
			h.modify("back", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(3)) })
			after := h.waitPods("back", "victim back to Normal", func(ps []corev1.Pod) bool {
				return len(lab.InState(ps, pub.LifecycleStateNormal)) == 3
			})
			assert.Equal(t, uids(pods), uids(after), "the same three pods, none created")
			assert.Equal(t, victim.UID, uids(after)[victim.Name])
		})
		t.Run(mode+"/scale in with podsToDelete then back", func(t *testing.T) {
			h, pods := setup(t, "named")
			victim := pods[0]
			h.modify("named", func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.Replicas = ptr.To(int32(2))
				cs.Spec.ScaleStrategy.PodsToDelete = []string{victim.Name}
			})
			h.waitPods("named", "victim PreparingDelete", func(ps []corev1.Pod) bool {
				pd := lab.InState(ps, pub.LifecycleStatePreparingDelete)
				return len(pd) == 1 && pd[0].Name == victim.Name
			})
			h.modify("named", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(3)) })
			h.expectReplacement(t, "named", victim.Name, exclude)
		})
		t.Run(mode+"/specified delete without scaling", func(t *testing.T) {
			h, pods := setup(t, "spec")
			victim := pods[1]
			h.patchPod(victim.Name, `{"metadata":{"labels":{"`+pub.SpecifiedDeleteKey+`":"true"}}}`)
			h.waitPods("spec", "victim PreparingDelete", func(ps []corev1.Pod) bool {
				pd := lab.InState(ps, pub.LifecycleStatePreparingDelete)
				return len(pd) == 1 && pd[0].Name == victim.Name
			})
			h.expectReplacement(t, "spec", victim.Name, exclude)
		})
	}
}

// expectReplacement: with exclude a replacement for the PreparingDelete pod
// is created at once; without it, only once the pod is released and gone.
func (h *harness) expectReplacement(t *testing.T, name, victim string, exclude bool) {
	t.Helper()
	others := func(ps []corev1.Pod) int {
		n := 0
		for _, p := range ps {
			if p.Name != victim {
				n++
			}
		}
		return n
	}
	if exclude {
		h.waitPods(name, "replacement created while the victim waits", func(ps []corev1.Pod) bool {
			return others(ps) == 3 && slices.Contains(names(ps), victim)
		})
	} else {
		testenv.Consistently(t, 2*time.Second, func() error {
			if n := others(h.pods(name)); n != 2 {
				return fmt.Errorf("%d pods besides the PreparingDelete one", n)
			}
			return nil
		})
	}
	h.Release(victim)
	h.waitPods(name, "victim gone, 3 ready", func(ps []corev1.Pod) bool { return allReady(3)(ps) && !slices.Contains(names(ps), victim) })
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// KruisePodReady is on every pod (as OpenKruise's pod webhook puts it), so
// a markPodNotReady hook added after the pods were created still takes
// them out of Service endpoints while they wait in PreparingDelete.
func TestMarkPodNotReadyAddedLater(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("later", 2, func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Labels[lab.HookLabel] = "true" }))
	lab.CheckKruisePodReady(t, h.waitPods("later", "2 ready", allReady(2)), "gate on every pod")
	// The hook alone changes no template: no new revision, the pods stay.
	h.modify("later", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{lab.HookLabel: "true"}, MarkPodNotReady: true}}
		cs.Spec.Replicas = ptr.To(int32(1))
	})
	waiting := h.waitPods("later", "one pod PreparingDelete and NotReady", func(ps []corev1.Pod) bool {
		pd := lab.InState(ps, pub.LifecycleStatePreparingDelete)
		return len(ps) == 2 && len(pd) == 1 && lab.PreparingDeleteNotReady(&pd[0])
	})
	victim := lab.InState(waiting, pub.LifecycleStatePreparingDelete)[0]
	h.Release(victim.Name)
	h.waitPods("later", "victim deleted", func(ps []corev1.Pod) bool { return len(ps) == 1 && !slices.Contains(names(ps), victim.Name) })
}
