package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// A template change that alters a label or annotation a container reads
// through env (fieldRef metadata.annotations[...]) needs that container
// restarted, and Flotilla has no node agent to do it. So it is not applied
// in place: InPlaceIfPossible recreates the pod (its new container gets the
// new value from the kubelet), InPlaceOnly refuses visibly and leaves the pod.
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
	changed := func(t *testing.T, name string, n int, updateType appsv1alpha1.CloneSetUpdateStrategyType) (*harness, []corev1.Pod) {
		h := newHarness(t)
		h.startController()
		h.create(newCloneSet(name, int32(n), withEnvRef(updateType)))
		before := h.waitPods(name, "ready", allReady(n))
		h.modify(name, func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Annotations["app-config"] = "config v2" })
		return h, before
	}

	t.Run("InPlaceIfPossible recreates", func(t *testing.T) {
		h, before := changed(t, "envmeta", 2, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
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
	})

	t.Run("InPlaceOnly refuses", func(t *testing.T) {
		h, before := changed(t, "envonly", 1, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType)
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
