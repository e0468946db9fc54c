package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const (
	sideV1 = "registry.local/side:v1"
	sideV2 = "registry.local/side:v2"
	sideV3 = "registry.local/side:v3"
)

// Item 4: `kubectl kruise set image sidecarset/<name> side=v2` rolls the
// sidecar of every injected pod in place: same pods (UIDs), the app
// container untouched (no restart), the sidecar restarted once on the new
// image, the per-SidecarSet in-place state recorded, and status counting
// matched/updated/ready pods.
func TestColdUpgrade(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.createSet(h.newSet("cold", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	}))
	h.createPods("cold", 4, nil, nil)
	before := h.waitPods("cold", "4 ready", allReady(4))
	h.waitStatus("cold", "4 matched, updated, ready", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 4 && s.UpdatedPods == 4 && s.ReadyPods == 4 && s.UpdatedReadyPods == 4
	})

	h.sets.Modify(h.setName("cold"), setImage("side", sideV2))
	after := h.waitPods("cold", "all on v2", allOn(4, "side", sideV2))
	set := h.waitStatus("cold", "4 updated and ready", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 4 && s.UpdatedPods == 4 && s.UpdatedReadyPods == 4
	})

	assert.Equal(t, testenv.PodUIDs(before), testenv.PodUIDs(after), "pods upgraded in place, not recreated")
	for i := range after {
		p := &after[i]
		assert.Equal(t, "registry.local/app:v1", image(p, "main"))
		assert.Equal(t, int32(0), restarts(p, "main"), "app container of %s kept running", p.Name)
		assert.Equal(t, int32(1), restarts(p, "side"), "sidecar of %s restarted once", p.Name)
		assert.Equal(t, set.Status.LatestRevision, sidecarcontrol.PodControllerRevision(p, set.Name))
		st := sidecarcontrol.States(p)[set.Name]
		if assert.NotNil(t, st, "%s: %s", p.Name, sidecarcontrol.InplaceUpdateStateKey) {
			assert.Contains(t, st.LastContainerStatuses, "side")
		}
	}
}

// Item 4: partition keeps pods on the old version, NotUpdate and paused stop
// the rollout, updateStrategy.selector limits it, and a change beyond images
// marks pods SidecarSetUpgradable=False instead of touching them.
func TestUpgradeControls(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.createSet(h.newSet("ctl", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
	}))
	h.createPods("ctl", 2, map[string]string{"canary": "true"}, nil)
	h.createPods("ctl", 2, nil, nil)
	h.waitPods("ctl", "4 ready", allReady(4))

	// partition 50% of 4: two pods move.
	h.sets.Modify(h.setName("ctl"), setImage("side", sideV2))
	h.waitStatus("ctl", "2 updated", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedPods == 2 && s.UpdatedReadyPods == 2 })
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := countOn(h.pods("ctl"), "side", sideV2); n != 2 {
			return assert.AnError
		}
		return nil
	})

	// paused: nothing moves even with partition 0.
	h.sets.Modify(h.setName("ctl"), func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Paused = true
		s.Spec.UpdateStrategy.Partition = nil
	})
	h.waitStatus("ctl", "seen paused", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedPods == 2 })
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := countOn(h.pods("ctl"), "side", sideV2); n != 2 {
			return assert.AnError
		}
		return nil
	})

	// selector: only canary pods go to v3.
	h.sets.Modify(h.setName("ctl"), func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Paused = false
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		setImage("side", sideV3)(s)
	})
	h.waitStatus("ctl", "2 canaries on v3", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedPods == 2 && s.UpdatedReadyPods == 2 })
	for _, p := range h.pods("ctl") {
		if p.Labels["canary"] == "true" {
			assert.Equal(t, sideV3, image(&p, "side"), p.Name)
		} else {
			assert.NotEqual(t, sideV3, image(&p, "side"), p.Name)
		}
	}

	// A change beyond images: pods are left alone and told so.
	h.sets.Modify(h.setName("ctl"), func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Selector = nil
		s.Spec.Containers[0].Command = []string{"/bin/sidecar", "--new-flag"}
	})
	pods := h.waitPods("ctl", "SidecarSetUpgradable=False on every pod", func(ps []corev1.Pod) bool {
		for i := range ps {
			if testenv.ConditionStatus(&ps[i], sidecarcontrol.UpgradableCondition) != corev1.ConditionFalse {
				return false
			}
		}
		return len(ps) == 4
	})
	for i := range pods {
		assert.Nil(t, pods[i].Spec.Containers[0].Command, "pod %s untouched", pods[i].Name)
	}
	h.waitStatus("ctl", "none updated", func(s appsv1alpha1.SidecarSetStatus) bool { return s.MatchedPods == 4 && s.UpdatedPods == 0 })

	// NotUpdate: back to an image-only difference, but nothing rolls.
	before := h.pods("ctl")
	set := h.sets.Modify(h.setName("ctl"), func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Command = nil
		s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
		setImage("side", sideV3)(s)
	})
	h.waitStatus("ctl", "NotUpdate observed", func(s appsv1alpha1.SidecarSetStatus) bool { return s.MatchedPods == 4 })
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, p := range h.pods("ctl") {
			for _, b := range before {
				if b.Name == p.Name && image(&b, "side") != image(&p, "side") {
					return fmt.Errorf("pod %s changed under NotUpdate", p.Name)
				}
			}
		}
		return nil
	})
	assert.Equal(t, int32(2), h.sets.Get(set.Name).Status.UpdatedPods, "the canaries are on v3 already")
}

// Issue 25 row 3: the SidecarSetUpgradable condition as OpenKruise writes
// it. A sidecar env change cannot be applied in place: the pods get
// False/UpdateImmutableField with message {"<set>":false} and are left
// alone. Back to an image-only change, every pod is upgraded and gets
// True/AllSidecarsetUpgradable with message {"<set>":true}.
func TestUpgradableConditionFollowsOpenKruise(t *testing.T) {
	h := newHarness(t)
	h.startController()
	set := h.createSet(h.newSet("env", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	}))
	h.createPods("env", 2, nil, nil)
	h.waitPods("env", "2 ready", allReady(2))

	upgradable := func(status corev1.ConditionStatus, reason, message string) func([]corev1.Pod) bool {
		return func(ps []corev1.Pod) bool {
			for i := range ps {
				c := condition(&ps[i], sidecarcontrol.UpgradableCondition)
				if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
					return false
				}
			}
			return len(ps) == 2
		}
	}

	h.sets.Modify(set.Name, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	pods := h.waitPods("env", "SidecarSetUpgradable=False {set:false}",
		upgradable(corev1.ConditionFalse, "UpdateImmutableField", fmt.Sprintf(`{%q:false}`, set.Name)))
	for i := range pods {
		for _, c := range pods[i].Spec.Containers {
			for _, e := range c.Env {
				assert.NotEqual(t, "MODE", e.Name, "pod %s untouched", pods[i].Name)
			}
		}
	}

	h.sets.Modify(set.Name, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = nil
		setImage("side", sideV2)(s)
	})
	h.waitPods("env", "all on v2", allOn(2, "side", sideV2))
	h.waitPods("env", "SidecarSetUpgradable=True {set:true}",
		upgradable(corev1.ConditionTrue, "AllSidecarsetUpgradable", fmt.Sprintf(`{%q:true}`, set.Name)))
}

// Item 3: each version of a SidecarSet is a ControllerRevision in the
// controller's namespace, labelled kruise.io/sidecarset-name and the
// SidecarSet's custom version; status.latestRevision names the latest; the
// history is cut to revisionHistoryLimit, keeping revisions pods use.
func TestRevisions(t *testing.T) {
	h := newHarness(t)
	h.startController()
	set := h.createSet(h.newSet("rev", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Labels[sidecarcontrol.CustomVersionLabel] = "version-1"
		s.Spec.RevisionHistoryLimit = ptr.To[int32](1)
		s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
	}))
	v1 := h.waitStatus("rev", "latestRevision", func(s appsv1alpha1.SidecarSetStatus) bool { return s.LatestRevision != "" })
	r1, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Get(context.Background(), v1.Status.LatestRevision, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, set.Name, r1.Labels[sidecarcontrol.RevisionNameLabel])
	assert.Equal(t, "version-1", r1.Labels[sidecarcontrol.CustomVersionLabel])
	assert.Equal(t, sidecarcontrol.Hash(set), r1.Annotations[sidecarcontrol.HashAnnotation])
	assert.True(t, metav1.IsControlledBy(r1, set), "revision controlled by its SidecarSet (garbage-collected with it)")
	assert.Contains(t, string(r1.Data.Raw), `"$patch":"replace"`)

	// A pod on version-1 keeps r1 alive through two more versions.
	h.createPods("rev", 1, nil, nil)
	for i, img := range []string{sideV2, sideV3} {
		h.sets.Modify(set.Name, func(s *appsv1alpha1.SidecarSet) {
			s.Labels[sidecarcontrol.CustomVersionLabel] = []string{"version-2", "version-3"}[i]
			setImage("side", img)(s)
		})
	}
	v3 := h.waitStatus("rev", "latest is v3", func(s appsv1alpha1.SidecarSetStatus) bool { return s.LatestRevision != v1.Status.LatestRevision })
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		list, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: sidecarcontrol.RevisionNameLabel + "=" + set.Name})
		if err != nil {
			return false, err
		}
		names := map[string]string{}
		for _, r := range list.Items {
			names[r.Name] = r.Labels[sidecarcontrol.CustomVersionLabel]
		}
		// version-2's revision is neither latest, nor used, nor within the limit of 1 old one beyond the live ones.
		return len(names) == 2 && names[v1.Status.LatestRevision] == "version-1" && names[v3.Status.LatestRevision] == "version-3", nil
	})
}

// Item 4: priorityStrategy picks the first pods to upgrade: with partition 3
// of 4, the one pod moved is the one with the highest `idx` label.
func TestUpgradePriority(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.createSet(h.newSet("prio", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
		s.Spec.UpdateStrategy.PriorityStrategy = &appspub.UpdatePriorityStrategy{OrderPriority: []appspub.UpdatePriorityOrderTerm{{OrderedKey: "idx"}}}
	}))
	h.createPods("prio", 4, nil, nil)
	h.waitPods("prio", "4 ready", allReady(4))
	h.sets.Modify(h.setName("prio"), setImage("side", sideV2))
	h.waitStatus("prio", "1 updated", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedReadyPods == 1 })
	for _, p := range h.pods("prio") {
		if p.Labels["idx"] == "3" {
			assert.Equal(t, sideV2, image(&p, "side"), "highest priority first")
		} else {
			assert.Equal(t, sideV1, image(&p, "side"), p.Name)
		}
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Issue 26 item 13: a pod whose sidecar upgrade state annotation does not
// decode is neither guessed about (read as "never upgraded", it would look
// consistent and be upgraded at once) nor dropped silently: the controller
// leaves it alone, says so in Warning events on the SidecarSet (cluster-scoped:
// its events are in "default") and on the pod, and upgrades the others. Once the annotation is removed, it is upgraded.
func TestCorruptAnnotationLeavesPodAloneAndReports(t *testing.T) {
	h := newHarness(t)
	h.startController()
	set := h.createSet(h.newSet("corrupt", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	}))
	created := h.createPods("corrupt", 2, nil, nil)
	h.waitPods("corrupt", "2 ready", allReady(2))
	bad := created[0].Name
	h.Env.PatchPod(t, h.NS, bad, fmt.Sprintf(`{"metadata":{"annotations":{%q:"{not json"}}}`, sidecarcontrol.InplaceUpdateStateKey))

	h.sets.Modify(set.Name, setImage("side", sideV2))
	h.waitPods("corrupt", "the readable pod on v2", func(ps []corev1.Pod) bool { return countOn(ps, "side", sideV2) == 1 })
	warned := func(name, ns string) bool {
		for _, e := range h.Env.Events(t, ns, name) {
			if e.Type == corev1.EventTypeWarning && e.Reason == "CorruptPodAnnotation" {
				return true
			}
		}
		return false
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return warned(set.Name, "default") && warned(bad, h.NS), nil })
	testenv.Consistently(t, 2*time.Second, func() error {
		for _, p := range h.pods("corrupt") {
			if p.Name == bad && image(&p, "side") != sideV1 {
				return fmt.Errorf("pod %s with an unreadable state was upgraded", bad)
			}
		}
		return nil
	})

	h.Env.PatchPod(t, h.NS, bad, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, sidecarcontrol.InplaceUpdateStateKey))
	h.waitPods("corrupt", "both on v2 once the annotation is gone", allOn(2, "side", sideV2))
}
