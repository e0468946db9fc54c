package integration

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// A template change that alters a label or annotation a container reads
// through env (fieldRef metadata.annotations[...]) needs that container
// restarted, and without KruiseDaemon no node agent does it; with it, no
// agent restarts a pod whose containers no agent has recorded (kwok's). So it
// is not applied in place: InPlaceIfPossible recreates the pod (its new
// container gets the new value from the kubelet), InPlaceOnly refuses
// visibly and leaves the pod.
func TestEnvFromMetadataNotInPlace(t *testing.T) {
	withEnvRef := func(updateType appsv1alpha1.CloneSetUpdateStrategyType) func(*appsv1alpha1.CloneSet) {
		return func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = updateType
			cs.Spec.Template.Annotations = map[string]string{"app-config": "config v1"}
			cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "APP_CONFIG", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['app-config']"}}}}
		}
	}
	// changed: a CloneSet of n pods reading the annotation, ready, whose
	// annotation then changes.
	changed := func(t *testing.T, name string, n int, updateType appsv1alpha1.CloneSetUpdateStrategyType, kruiseDaemon bool) (*harness, []corev1.Pod) {
		h := newHarness(t)
		h.gates[features.KruiseDaemon] = kruiseDaemon
		h.startController()
		h.create(newCloneSet(name, int32(n), withEnvRef(updateType)))
		before := h.waitPods(name, "ready", allReady(n))
		h.modify(name, func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Annotations["app-config"] = "config v2" })
		return h, before
	}

	recreates := func(t *testing.T, kruiseDaemon bool) {
		h, before := changed(t, "envmeta", 2, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, kruiseDaemon)
		after := h.waitPods("envmeta", "recreated with the new annotation", func(ps []corev1.Pod) bool {
			if !allReady(2)(ps) {
				return false
			}
			for _, p := range ps {
				if p.Annotations["app-config"] != "config v2" {
					return false
				}
			}
			return true
		})
		for _, b := range before {
			for _, a := range after {
				assert.NotEqual(t, b.UID, a.UID, "pod %s kept: its container would still read config v1", b.Name)
			}
		}
		for _, a := range after {
			assert.Empty(t, a.Annotations[pub.InPlaceUpdateStateKey], "never updated in place")
		}
		h.waitStatus("envmeta", "settled", settled(2))
	}
	t.Run("InPlaceIfPossible recreates", func(t *testing.T) { recreates(t, false) })
	t.Run("KruiseDaemon, no agent record on the pods: InPlaceIfPossible recreates", func(t *testing.T) { recreates(t, true) })

	t.Run("InPlaceOnly refuses", func(t *testing.T) {
		h, before := changed(t, "envonly", 1, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, false)
		ev := h.waitEvent("envonly", "FailedUpdatePodInPlace")
		assert.Equal(t, corev1.EventTypeWarning, ev.Type)
		assert.Contains(t, ev.Message, "container env reads")
		h.waitStatus("envonly", "FailedUpdate condition", func(s appsv1alpha1.CloneSetStatus) bool {
			for _, c := range s.Conditions {
				if c.Type == appsv1alpha1.CloneSetConditionFailedUpdate && c.Status == corev1.ConditionTrue {
					return true
				}
			}
			return false
		})
		pods := h.pods("envonly")
		assert.Len(t, pods, 1)
		assert.Equal(t, before[0].UID, pods[0].UID, "the pod is left as it is")
		assert.Equal(t, "config v1", pods[0].Annotations["app-config"])
		assert.Equal(t, int32(0), h.get("envonly").Status.UpdatedReplicas, "nothing claimed updated")
	})
}

// With KruiseDaemon and InPlaceUpdateEnvFromMetadata (a node agent restarts containers), the same change is an
// in-place update: the pod keeps its UID and gets the new annotation, its state says updateEnvFromMetadata, and
// the CloneSet counts it updated-ready only once the agent's runtime-containers-meta shows the container running
// with the new value (played here by the test: kwok has no runtime; test/e2e/realnode has the real agent).
func TestEnvFromMetadataInPlaceWithAgent(t *testing.T) {
	h := newHarness(t)
	h.gates[features.KruiseDaemon] = true
	h.startController()
	h.create(newCloneSet("envagent", 1, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		cs.Spec.Template.Annotations = map[string]string{"app-config": "config v1"}
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "APP_CONFIG", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['app-config']"}}}}
	}))
	before := h.waitPods("envagent", "ready", allReady(1))[0]
	// The agent records the container as started with config v1 (what it does for every pod it looks after).
	h.PatchPod(before.Name, agentRecord(t, before, "config v1"))
	h.waitPods("envagent", "recorded by the agent", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && ps[0].Annotations[pub.RuntimeContainerMetaKey] != ""
	})
	h.modify("envagent", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Annotations["app-config"] = "config v2" })

	p := h.waitPods("envagent", "annotation patched in place, gate False", func(ps []corev1.Pod) bool {
		c := podutil.GetCondition(&ps[0], pub.InPlaceUpdateReady)
		return len(ps) == 1 && ps[0].Annotations["app-config"] == "config v2" && c != nil && c.Status == corev1.ConditionFalse
	})[0]
	assert.Equal(t, before.UID, p.UID, "updated in place")
	state, err := inplace.DecodeState(&p)
	require.NoError(t, err)
	require.NotNil(t, state)
	assert.True(t, state.UpdateEnvFromMetadata)
	h.waitStatus("envagent", "updated, not ready", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.UpdatedReplicas == 1 && s.UpdatedReadyReplicas == 0 && s.ObservedGeneration == 2
	})

	// The agent reports the container restarted with the new value (same containerID on kwok).
	h.PatchPod(p.Name, agentRecord(t, p, "config v2"))
	h.waitStatus("envagent", "updated and ready once the restart is reported", settled(1))
	c := podutil.GetCondition(h.PodObjects().Get(p.Name), pub.InPlaceUpdateReady)
	require.NotNil(t, c)
	assert.Equal(t, corev1.ConditionTrue, c.Status)
}

// agentRecord is the patch a node agent writes once it has seen pod's containers running with APP_CONFIG=value.
func agentRecord(t *testing.T, p corev1.Pod, value string) string {
	t.Helper()
	set := &pub.RuntimeContainerMetaSet{}
	for _, cs := range p.Status.ContainerStatuses {
		c := &p.Spec.Containers[0]
		set.Containers = append(set.Containers, pub.RuntimeContainerMeta{Name: cs.Name, ContainerID: cs.ContainerID,
			Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: containermeta.CurrentHash(c, map[string]string{"APP_CONFIG": value})}})
	}
	v, err := containermeta.Encode(set)
	require.NoError(t, err)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{pub.RuntimeContainerMetaKey: v}}})
	require.NoError(t, err)
	return string(patch)
}
