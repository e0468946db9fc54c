package integration

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// A pod parked in its grace period is labelled with the revision it is
// moving to; what happens to the template meanwhile must not strand it there
// with the old images. Each case starts an image update v1 → v2 with a grace
// period, changes the CloneSet while the pod waits, and checks the pod ends
// running what its label says.
func TestInPlaceGracePeriodInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int32
		// partition: pods kept at the current revision at first
		partition int32
		gates     map[featuregate.Feature]bool
		change    func(*appsv1alpha1.CloneSet)
		image     string // the image the pod must end with
		toUpdate  bool   // labelled with status.updateRevision (else currentRevision)
	}{{
		// The template moves on to a revision that differs from the parked one
		// only in its labels: the pod must still get v2 before it is labelled
		// with the new revision.
		name:     "template changed",
		replicas: 1,
		change:   func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Labels["extra"] = "x" },
		image:    imageV2,
		toUpdate: true,
	}, {
		// CloneSetPartitionRollback: the partition grows over the updated pod
		// during its grace period; it finishes v2, then rolls back to v1 (the
		// other pod keeps currentRevision at v1).
		name:      "partition rollback",
		replicas:  2,
		partition: 1,
		gates:     map[featuregate.Feature]bool{features.CloneSetPartitionRollback: true},
		change:    func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2)) },
		image:     imageV1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for g, v := range tc.gates {
				h.gates[g] = v
			}
			h.startController()
			n := int(tc.replicas)
			h.create(newCloneSet("grace", tc.replicas, func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(tc.partition))
				cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
				cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 2}
			}))
			h.waitPods("grace", "ready", allReady(n))
			h.modify("grace", setImage(imageV2))
			h.waitPods("grace", "a pod parked in its grace period", func(ps []corev1.Pod) bool {
				return slices.ContainsFunc(ps, func(p corev1.Pod) bool { return p.Annotations[pub.InPlaceUpdateGraceKey] != "" })
			})
			h.modify("grace", tc.change)

			cs := h.waitStatus("grace", "settled", func(s appsv1alpha1.CloneSetStatus) bool {
				return s.ObservedGeneration == h.get("grace").Generation && s.ReadyReplicas == tc.replicas && s.AvailableReplicas == tc.replicas &&
					(tc.toUpdate && s.UpdatedReadyReplicas == tc.replicas || !tc.toUpdate && s.UpdatedReplicas == 0)
			})
			want := cs.Status.UpdateRevision
			if !tc.toUpdate {
				want = cs.Status.CurrentRevision
			}
			pods := h.waitPods("grace", "labelled "+want+" and ready", func(ps []corev1.Pod) bool {
				return allReady(n)(ps) && !slices.ContainsFunc(ps, func(p corev1.Pod) bool {
					return p.Labels[pub.ControllerRevisionHashLabelKey] != want || p.Annotations[pub.InPlaceUpdateGraceKey] != ""
				})
			})
			for _, p := range pods {
				assert.Equal(t, tc.image, p.Spec.Containers[0].Image, "pod %s runs what its revision label says", p.Name)
				assert.Equal(t, string(pub.LifecycleStateNormal), p.Labels[pub.LifecycleStateKey])
			}
		})
	}
}
