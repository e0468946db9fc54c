package integration

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
)

func setImage(image string) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = image }
}

func countImage(pods []corev1.Pod, image string) int {
	n := 0
	for _, p := range pods {
		if p.Spec.Containers[0].Image == image {
			n++
		}
	}
	return n
}

// Item 2: ReCreate replaces every pod, at most maxUnavailable (default 20%,
// rounded up: 1 of 4) at a time, and advances currentRevision at the end.
func TestRecreateRollingUpdate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("rc", 4))
	old := h.waitPods("rc", "4 ready", allReady(4))
	before := h.waitStatus("rc", "settled", settled(4))
	w := h.watchInvariants("rc", invariants{maxPods: 4, minReady: 3})

	h.modify("rc", setImage(imageV2))
	pods := h.waitPods("rc", "all on v2", func(ps []corev1.Pod) bool { return allReady(4)(ps) && allImage(ps, imageV2) })
	after := h.waitStatus("rc", "settled on v2", settled(4))
	w.check(t)
	for _, p := range old {
		assert.NotContains(t, names(pods), p.Name, "recreated pods get new names")
	}
	assert.NotEqual(t, before.Status.UpdateRevision, after.Status.UpdateRevision)
	assert.Equal(t, after.Status.UpdateRevision, after.Status.CurrentRevision)
	assert.Len(t, h.revisions(after), 2)
}

// Item 2: partition as a number, then as a percentage with the v1.2 rule
// ("99%" of 4 keeps 3, so one pod is updated), then 0.
func TestPartition(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("part", 4, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
	}))
	h.waitPods("part", "4 ready", allReady(4))
	h.modify("part", setImage(imageV2))
	st := h.waitStatus("part", "1 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 1 && s.ReadyReplicas == 4 })
	assert.Equal(t, int32(1), st.Status.ExpectedUpdatedReplicas)
	assert.NotEqual(t, st.Status.UpdateRevision, st.Status.CurrentRevision, "currentRevision waits for the whole rollout")
	assert.Equal(t, 1, countImage(h.pods("part"), imageV2))

	h.modify("part", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%")) })
	st = h.waitStatus("part", "2 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 2 && s.ReadyReplicas == 4 })
	assert.Equal(t, int32(2), st.Status.ExpectedUpdatedReplicas)

	// A new template with "99%": still one pod of 4 on the newest revision.
	h.modify("part", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
		cs.Spec.Template.Spec.Containers[0].Image = imageV3
	})
	st = h.waitStatus("part", "1 on v3", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 1 && s.ReadyReplicas == 4 })
	assert.Equal(t, int32(1), st.Status.ExpectedUpdatedReplicas)
	assert.Equal(t, 1, countImage(h.pods("part"), imageV3))

	h.modify("part", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = nil })
	h.waitPods("part", "all on v3", func(ps []corev1.Pod) bool { return allReady(4)(ps) && allImage(ps, imageV3) })
	h.waitStatus("part", "settled", settled(4))
}

// Item 2: maxSurge creates a new pod before removing an old one; with
// maxUnavailable 0 the ready count never drops.
func TestMaxSurgeUpdate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("surge-up", 3, surgeFirst))
	h.waitPods("surge-up", "3 ready", allReady(3))
	w := h.watchInvariants("surge-up", invariants{maxPods: 4, minReady: 3})
	h.modify("surge-up", setImage(imageV2))
	h.waitPods("surge-up", "all on v2", func(ps []corev1.Pod) bool { return allReady(3)(ps) && allImage(ps, imageV2) })
	h.waitStatus("surge-up", "settled", settled(3))
	w.check(t)
	assert.Equal(t, 4, w.peakPods(), "surge was used")
}

// Item 2: paused stops the rollout; unpausing resumes it.
func TestPaused(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("pause", 2, func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true }))
	h.waitPods("pause", "2 ready", allReady(2))
	h.modify("pause", setImage(imageV2))
	st := h.waitStatus("pause", "paused condition", func(s appsv1alpha1.CloneSetStatus) bool {
		for _, c := range s.Conditions {
			if c.Type == appsv1alpha1.CloneSetConditionTypeProgressing && c.Reason == appsv1alpha1.CloneSetProgressPaused {
				return true
			}
		}
		return false
	})
	assert.Equal(t, int32(0), st.Status.UpdatedReplicas)
	assert.Equal(t, 0, countImage(h.pods("pause"), imageV2))
	h.modify("pause", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = false })
	h.waitPods("pause", "all on v2", func(ps []corev1.Pod) bool { return allReady(2)(ps) && allImage(ps, imageV2) })
}

// Item 2: with gate CloneSetPartitionRollback, raising the partition moves
// updated pods back to the current revision; without it they stay.
func TestPartitionRollback(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(map[bool]string{true: "gate on", false: "gate off"}[gate], func(t *testing.T) {
			h := newHarness(t)
			h.gates[features.CloneSetPartitionRollback] = gate
			h.startController()
			h.create(newCloneSet("rb", 4, inPlacePartition(2)))
			h.waitPods("rb", "4 ready", allReady(4))
			h.modify("rb", setImage(imageV2))
			h.waitStatus("rb", "2 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 2 && s.ReadyReplicas == 4 })
			h.modify("rb", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(4)) })
			if gate {
				h.waitPods("rb", "all back on v1", func(ps []corev1.Pod) bool { return allReady(4)(ps) && allImage(ps, imageV1) })
				st := h.waitStatus("rb", "none updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReplicas == 0 && s.ReadyReplicas == 4 })
				assert.Equal(t, int32(0), st.Status.ExpectedUpdatedReplicas)
				return
			}
			st := h.waitStatus("rb", "partition observed", func(s appsv1alpha1.CloneSetStatus) bool { return s.ExpectedUpdatedReplicas == 0 })
			assert.Equal(t, int32(2), st.Status.UpdatedReplicas, "updated pods stay without the gate")
			assert.Equal(t, 2, countImage(h.pods("rb"), imageV2))
		})
	}
}

// Item 2: priorityStrategy.weightPriority picks the pod to update first.
func TestPriorityStrategy(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("prio", 3, inPlacePartition(2), func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "order"}}}
	}))
	pods := h.waitPods("prio", "3 ready", allReady(3))
	for i, p := range pods {
		h.patchPod(p.Name, `{"metadata":{"labels":{"order":"`+[]string{"1", "9", "5"}[i]+`"}}}`)
	}
	h.modify("prio", setImage(imageV2))
	h.waitStatus("prio", "1 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 1 })
	for _, p := range h.pods("prio") {
		assert.Equal(t, p.Name == pods[1].Name, p.Spec.Containers[0].Image == imageV2, "only the pod with the highest order value (9) is updated: %s", p.Name)
	}
}

// Item 3: an image change restarts only the changed container; the pod keeps
// name, UID, node and IP; InPlaceUpdateReady goes False then True; the state
// annotation has the documented shape.
func TestInPlaceImageUpdate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("ip", 2, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "registry.local/sidecar:v1"})
		// Fields the controller's slimmed pod cache leaves out: the in-place
		// patches must not touch them.
		main := &cs.Spec.Template.Spec.Containers[0]
		main.Env = append(main.Env, corev1.EnvVar{Name: "GREETING", Value: "hello"})
		main.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
		cs.Spec.Template.Spec.Tolerations = append(cs.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: "example.com/slim", Operator: corev1.TolerationOpExists})
	}))
	before := h.waitPods("ip", "2 ready", allReady(2))
	h.waitStatus("ip", "settled", settled(2))
	w := h.watchInvariants("ip", invariants{maxPods: 2, minReady: 1})
	h.modify("ip", setImage(imageV2))
	after := h.waitPods("ip", "updated in place", func(ps []corev1.Pod) bool {
		if !allReady(2)(ps) || !allImage(ps, imageV2) {
			return false
		}
		for _, p := range ps {
			if condStatus(&p, pub.InPlaceUpdateReady) != corev1.ConditionTrue || p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
				return false
			}
		}
		return true
	})
	st := h.waitStatus("ip", "settled", settled(2))
	w.waitCaughtUp(h, "ip")
	w.check(t)
	assert.Empty(t, w.deletedPods(), "no pod deleted")
	for i, p := range after {
		b := before[i]
		assert.Equal(t, b.Name, p.Name)
		assert.Equal(t, b.UID, p.UID)
		assert.Equal(t, b.Spec.NodeName, p.Spec.NodeName)
		assert.Equal(t, b.Status.PodIP, p.Status.PodIP)
		assert.Equal(t, st.Status.UpdateRevision, p.Labels[pub.ControllerRevisionHashLabelKey])
		// Only the image changed in the spec: volumes, env, resources and
		// tolerations the controller never cached are intact.
		want := b.Spec.DeepCopy()
		want.Containers[0].Image = imageV2
		assert.Equal(t, *want, p.Spec, "spec of %s apart from the image", p.Name)
		assert.NotEmpty(t, p.Spec.Volumes, "the API server's service-account volume")
		assert.Equal(t, b.Status.StartTime, p.Status.StartTime)
		assert.Equal(t, b.Status.QOSClass, p.Status.QOSClass)
		for _, cst := range p.Status.ContainerStatuses {
			want := int32(0)
			if cst.Name == "main" {
				want = 1
			}
			assert.Equal(t, want, cst.RestartCount, "container %s of %s", cst.Name, p.Name)
		}
		// State annotation: the shape of the v1.1 seed.
		var state map[string]any
		require.NoError(t, json.Unmarshal([]byte(p.Annotations[pub.InPlaceUpdateStateKey]), &state))
		assert.Equal(t, st.Status.UpdateRevision, state["revision"])
		assert.NotEmpty(t, state["updateTimestamp"])
		last := state["lastContainerStatuses"].(map[string]any)
		assert.Contains(t, last, "main")
		assert.NotContains(t, last, "sidecar")
		assert.Equal(t, b.Status.ContainerStatuses[slices.IndexFunc(b.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Name == "main" })].ImageID,
			last["main"].(map[string]any)["imageID"], "the old image id is recorded")
		assert.Equal(t, true, state["updateImages"])
		// InPlaceUpdateReady went False (with Ready False) before the image changed, then True.
		var sawFalse bool
		for _, v := range w.versions(p.Name) {
			if condStatus(v, pub.InPlaceUpdateReady) == corev1.ConditionFalse {
				sawFalse = true
				assert.Equal(t, corev1.ConditionFalse, condStatus(v, corev1.PodReady), "Ready follows the gate")
			}
		}
		assert.True(t, sawFalse, "InPlaceUpdateReady=False observed on %s", p.Name)
	}
}

// Item 3: a label/annotation-only template change is applied in place, and
// with ReCreate as well? No: only in-place strategies apply it in place.
func TestInPlaceMetadataOnly(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("meta", 2, strategy(appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType)))
	before := h.waitPods("meta", "2 ready", allReady(2))
	h.modify("meta", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Labels["tier"] = "gold"
		cs.Spec.Template.Annotations = map[string]string{"note": "v2"}
	})
	after := h.waitPods("meta", "labels applied", func(ps []corev1.Pod) bool {
		if !allReady(2)(ps) {
			return false
		}
		for _, p := range ps {
			if p.Labels["tier"] != "gold" || p.Annotations["note"] != "v2" {
				return false
			}
		}
		return true
	})
	assert.Equal(t, uids(before), uids(after), "same pods")
	for _, p := range after {
		for _, c := range p.Status.ContainerStatuses {
			assert.Zero(t, c.RestartCount, "no container restarted")
		}
	}
	h.waitStatus("meta", "settled", settled(2))
}

// Item 3 (v1.1 seed): containers with launch priorities update in batches,
// higher priority first. (The seed's sidecar reads a changed annotation
// through its env; without a node agent that is not in-place-able, see
// TestEnvFromMetadataNotInPlace, so here the sidecar's image changes.)
func TestInPlaceContainerPriorityBatches(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("batch", 1, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.Template.Annotations = map[string]string{"app-config": "config v1"}
		cs.Spec.Template.Spec.Containers = []corev1.Container{
			{Name: "sidecar", Image: "registry.local/sidecar:v1", Env: []corev1.EnvVar{
				{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"},
			}},
			{Name: "main", Image: imageV1},
		}
	}))
	h.waitPods("batch", "ready", allReady(1))
	w := h.watchInvariants("batch", invariants{})
	h.modify("batch", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Annotations["app-config"] = "config v2"
		cs.Spec.Template.Spec.Containers[0].Image = "registry.local/sidecar:v2"
		cs.Spec.Template.Spec.Containers[1].Image = imageV2
	})
	pods := h.waitPods("batch", "main on v2", func(ps []corev1.Pod) bool {
		return allReady(1)(ps) && ps[0].Spec.Containers[1].Image == imageV2 && condStatus(&ps[0], pub.InPlaceUpdateReady) == corev1.ConditionTrue
	})
	p := pods[0]
	assert.Equal(t, "config v2", p.Annotations["app-config"])
	var state pub.InPlaceUpdateState
	require.NoError(t, json.Unmarshal([]byte(p.Annotations[pub.InPlaceUpdateStateKey]), &state))
	require.Len(t, state.ContainerBatchesRecord, 2, "two batches: %+v", state.ContainerBatchesRecord)
	assert.Equal(t, []string{"sidecar"}, state.ContainerBatchesRecord[0].Containers)
	assert.Equal(t, []string{"main"}, state.ContainerBatchesRecord[1].Containers)
	assert.Contains(t, state.LastContainerStatuses, "main")
	assert.Empty(t, state.NextContainerImages)
	assert.False(t, state.UpdateEnvFromMetadata)
	// In between, the state showed main waiting for the sidecar.
	w.waitCaughtUp(h, "batch")
	var sawNext bool
	for _, v := range w.versions(p.Name) {
		var s pub.InPlaceUpdateState
		if json.Unmarshal([]byte(v.Annotations[pub.InPlaceUpdateStateKey]), &s) == nil && s.NextContainerImages["main"] == imageV2 {
			sawNext = true
			assert.Equal(t, imageV1, v.Spec.Containers[1].Image, "main waits while it is in nextContainerImages")
			assert.Equal(t, []string{"sidecar"}, s.PreCheckBeforeNext.ContainersRequiredReady)
		}
	}
	assert.True(t, sawNext, "the first batch left main for later")
}

// Item 3: inPlaceUpdateStrategy.gracePeriodSeconds: the pod is marked
// not ready first and its image changes only after the grace period.
func TestInPlaceGracePeriod(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("grace", 1, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 3}
	}))
	h.waitPods("grace", "ready", allReady(1))
	w := h.watchInvariants("grace", invariants{})
	h.modify("grace", setImage(imageV2))
	pods := h.waitPods("grace", "on v2", func(ps []corev1.Pod) bool { return allReady(1)(ps) && allImage(ps, imageV2) })
	w.waitCaughtUp(h, "grace")
	var markedAt, changedAt *corev1.Pod
	for _, v := range w.versions(pods[0].Name) {
		if markedAt == nil && v.Annotations[pub.InPlaceUpdateGraceKey] != "" {
			markedAt = v
			assert.Equal(t, imageV1, v.Spec.Containers[0].Image, "image unchanged during the grace period")
		}
		if changedAt == nil && v.Spec.Containers[0].Image == imageV2 {
			changedAt = v
		}
	}
	require.NotNil(t, markedAt, "grace annotation written")
	require.NotNil(t, changedAt)
	var state pub.InPlaceUpdateState
	require.NoError(t, json.Unmarshal([]byte(changedAt.Annotations[pub.InPlaceUpdateStateKey]), &state))
	require.Len(t, state.ContainerBatchesRecord, 1)
	waited := state.ContainerBatchesRecord[0].Timestamp.Sub(state.UpdateTimestamp.Time)
	assert.GreaterOrEqual(t, waited.Seconds(), 3.0, "containers changed only after the grace period")
}

// Item 2: scatterStrategy spreads the pods carrying a label over the rollout:
// the weight priority puts both zone=a pods first, scatter moves one of them
// back, so the first two pods updated include exactly one zone=a pod.
func TestScatterStrategy(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("scatter", 6, inPlacePartition(4), func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
			{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
		}}
		cs.Spec.UpdateStrategy.ScatterStrategy = pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}}
	}))
	pods := h.waitPods("scatter", "6 ready", allReady(6))
	zoneA := map[string]bool{pods[0].Name: true, pods[3].Name: true}
	for n := range zoneA {
		h.patchPod(n, `{"metadata":{"labels":{"zone":"a"}}}`)
	}
	h.modify("scatter", setImage(imageV2))
	h.waitStatus("scatter", "2 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 2 && s.ReadyReplicas == 6 })
	updatedA := 0
	for _, p := range h.pods("scatter") {
		if p.Spec.Containers[0].Image == imageV2 && zoneA[p.Name] {
			updatedA++
		}
	}
	assert.Equal(t, 1, updatedA, "exactly one zone=a pod among the first two updated")
}

// Item 2: InPlaceOnly with a change that cannot be applied in place (an env
// var) updates nothing, reports a Warning event and the FailedUpdate
// condition, and recreates no pod.
func TestInPlaceOnlyRefusesRecreate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("only", 2, strategy(appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType)))
	before := h.waitPods("only", "2 ready", allReady(2))
	h.modify("only", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	ev := h.waitEvent("only", "FailedUpdatePodInPlace")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, "InPlaceOnly")
	h.waitStatus("only", "FailedUpdate", func(s appsv1alpha1.CloneSetStatus) bool {
		c := findCond(s.Conditions, appsv1alpha1.CloneSetConditionFailedUpdate)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	assert.Equal(t, uids(before), uids(h.pods("only")), "no pod recreated")
}
