package integration

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The v0.9 seed's three examples of a specified delete under maxUnavailable
// and maxSurge, with pod-a already unavailable:
//   - maxUnavailable=2, maxSurge=1, delete pod-b: deleted at once, then replaced;
//   - maxUnavailable=1, maxSurge=1, delete pod-b: a new pod is created and
//     must be ready before pod-b is deleted;
//   - maxUnavailable=1, maxSurge=1, delete pod-a: deleted at once, then replaced.
func TestSeedSpecifiedDeleteWithUnavailablePod(t *testing.T) {
	cases := []struct {
		name           string
		maxUnavailable int32
		deleteA        bool
		// peak live pods and the ready floor the watcher enforces.
		peak, minReady int
	}{
		{name: "mu2-delete-b", maxUnavailable: 2, peak: 3, minReady: 1},
		{name: "mu1-delete-b", maxUnavailable: 1, peak: 4, minReady: 2},
		{name: "mu1-delete-a", maxUnavailable: 1, deleteA: true, peak: 3, minReady: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.startController()
			name := "seed-" + tc.name
			h.create(newCloneSet(name, 3, func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(tc.maxUnavailable))
				cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			}))
			pods := h.waitPods(name, "3 ready", allReady(3))
			h.waitStatus(name, "3 available", func(s appsv1alpha1.CloneSetStatus) bool { return s.AvailableReplicas == 3 })
			a, b := pods[0].Name, pods[1].Name
			h.patchPod(a, `{"metadata":{"annotations":{"`+unreadyAnnotation+`":"main"}}}`)
			h.waitStatus(name, "pod-a unavailable", func(s appsv1alpha1.CloneSetStatus) bool { return s.AvailableReplicas == 2 })
			w := h.watchInvariants(name, invariants{maxPods: tc.peak, minReady: tc.minReady})
			victim := b
			if tc.deleteA {
				victim = a
			}
			h.modify(name, func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{victim} })
			h.waitPods(name, "victim replaced", func(ps []corev1.Pod) bool {
				return len(ps) == 3 && !slices.Contains(names(ps), victim) && readyCount(ps) >= 3-boolInt(!tc.deleteA)
			})
			w.check(t)
			assert.Equal(t, tc.peak, w.peakPods())
		})
	}
}

func readyCount(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if podReady(&pods[i]) {
			n++
		}
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The v1.2 seed: replicas 8 with partition 90% updates one pod and reports
// expectedUpdatedReplicas 1.
func TestSeedPartitionPercentage(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("pct", 8, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
	}))
	h.waitStatus("pct", "settled", settled(8))
	h.modify("pct", setImage(imageV2))
	st := h.waitStatus("pct", "1 updated and ready", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.UpdatedReadyReplicas == 1 && s.ReadyReplicas == 8
	})
	assert.Equal(t, int32(1), st.Status.ExpectedUpdatedReplicas)
	assert.Equal(t, int32(1), st.Status.UpdatedReplicas)
	assert.Equal(t, 1, countImage(h.pods("pct"), imageV2))
}
