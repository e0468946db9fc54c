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

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// rollTo changes the image and waits for the new daemonSetHash.
func (h *harness) rollTo(name, image string) string {
	h.T.Helper()
	old := h.sets.Get(name).Status.DaemonSetHash
	h.sets.Modify(name, setImage(image))
	ds := h.sets.WaitFor(name, "new daemonSetHash", func(ds *appsv1alpha1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DaemonSetHash != old
	})
	return ds.Status.DaemonSetHash
}

// TestRollingUpdateMaxUnavailable: Standard with maxUnavailable 1 recreates
// the pods one node at a time; at no pod event is more than one node without
// a Ready pod; every counter ends settled on the new hash.
func TestRollingUpdateMaxUnavailable(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("std", 4)
	h.waitStatus("std", "settled", settled(4))
	w := h.watchPods("std", func(by map[string][]*corev1.Pod) string {
		if n := unavailableNodes(nodes, by); n > 1 {
			return fmt.Sprintf("%d nodes unavailable", n)
		}
		for n, ps := range by {
			if live := testenv.Live(derefPods(ps)); len(live) > 1 {
				return fmt.Sprintf("node %s has %d pods without surge", n, len(live))
			}
		}
		return ""
	})
	hash := h.rollTo("std", imageV2)
	after := h.waitPlaced("std", nodes, hash)
	h.waitStatus("std", "settled on the new hash", settled(4))
	w.check(t)
	for n, p := range after {
		assert.NotEqual(t, before[n].UID, p.UID, "recreated")
		assert.Equal(t, imageV2, p.Spec.Containers[0].Image)
	}
}

// TestRollingUpdateSurge: maxSurge 1 (and the deprecated Surging type,
// which means the same) starts the new pod next to the old one and deletes
// the old one once the new one is available: every node keeps a Ready pod
// throughout, and at most one node has two.
func TestRollingUpdateSurge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rolled func(*appsv1alpha1.RollingUpdateDaemonSet)
	}{
		{"maxsurge", func(r *appsv1alpha1.RollingUpdateDaemonSet) {
			r.MaxSurge = ptr.To(intstr.FromInt32(1))
			r.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}},
		{"surging", func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Type = appsv1alpha1.SurgingRollingUpdateType }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			nodes := h.nodes(3, nil)
			h.start()
			h.sets.Create(h.newDS(tc.name, rolling(tc.rolled)))
			h.waitPlaced(tc.name, nodes, "")
			h.waitStatus(tc.name, "settled", settled(3))
			w := h.watchPods(tc.name, func(by map[string][]*corev1.Pod) string {
				if n := unavailableNodes(nodes, by); n > 0 {
					return fmt.Sprintf("%d nodes without a Ready pod", n)
				}
				doubled := 0
				for _, ps := range by {
					if len(testenv.Live(derefPods(ps))) > 1 {
						doubled++
					}
				}
				if doubled > 1 {
					return fmt.Sprintf("%d nodes with two pods (maxSurge 1)", doubled)
				}
				return ""
			})
			hash := h.rollTo(tc.name, imageV2)
			h.waitPlaced(tc.name, nodes, hash)
			h.waitStatus(tc.name, "settled on the new hash", settled(3))
			w.check(t)
		})
	}
}

// TestPartitionSelectorPaused: partition keeps the lowest-named nodes old;
// rollingUpdate.selector updates only matching nodes; paused stops the
// update (placement goes on); lifting each lets the update finish.
func TestPartitionSelectorPaused(t *testing.T) {
	h := newHarness(t)
	nodes, _ := h.place("part", 4, rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) {
		r.Partition = ptr.To(intstr.FromString("50%"))
		r.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	}))
	oldHash := h.waitStatus("part", "settled", settled(4)).Status.DaemonSetHash
	hash := h.rollTo("part", imageV2)
	want := map[string]string{nodes[0]: oldHash, nodes[1]: oldHash, nodes[2]: hash, nodes[3]: hash}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return assert.ObjectsAreEqual(want, h.hashes("part")), nil })
	h.waitStatus("part", "2 updated", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.UpdatedNumberScheduled == 2 && s.NumberAvailable == 4
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if got := h.hashes("part"); !assert.ObjectsAreEqual(want, got) {
			return fmt.Errorf("partition not held: %v", got)
		}
		return nil
	})

	// Selector: only nodes labelled zone=x among the rest.
	h.Nodes().Modify(nodes[0], func(n *corev1.Node) { n.Labels["zone"] = "x" })
	h.sets.Modify("part", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) {
		r.Partition = nil
		r.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "x"}}
	}))
	want[nodes[0]] = hash
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return assert.ObjectsAreEqual(want, h.hashes("part")), nil })
	testenv.Consistently(t, 2*time.Second, func() error {
		if got := h.hashes("part")[nodes[1]]; got != oldHash {
			return fmt.Errorf("node %s outside the selector was updated", nodes[1])
		}
		return nil
	})

	// Paused: no update step, even without a selector; a new node still gets a pod.
	h.sets.Modify("part", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Selector = nil; r.Paused = ptr.To(true) }))
	h.waitStatus("part", "observed", func(appsv1alpha1.DaemonSetStatus) bool { return true })
	extra := h.nodes(1, nil)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.byNode("part")[extra[0]]) == 1, nil })
	testenv.Consistently(t, 2*time.Second, func() error {
		if got := h.hashes("part")[nodes[1]]; got != oldHash {
			return fmt.Errorf("paused DaemonSet updated node %s", nodes[1])
		}
		return nil
	})
	h.sets.Modify("part", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Paused = nil }))
	h.waitPlaced("part", append(append([]string{}, nodes...), extra...), hash)
	h.waitStatus("part", "settled", settled(5))
}

// TestOnDelete: a template change updates nothing until a pod is deleted;
// its replacement runs the new template.
func TestOnDelete(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("ondel", 2, func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.OnDeleteDaemonSetStrategyType}
	})
	h.waitStatus("ondel", "settled", settled(2))
	hash := h.rollTo("ondel", imageV2)
	testenv.Consistently(t, 2*time.Second, func() error {
		for n, ps := range h.byNode("ondel") {
			if len(ps) != 1 || ps[0].UID != before[n].UID {
				return fmt.Errorf("OnDelete replaced the pod of %s", n)
			}
		}
		return nil
	})
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), before[nodes[0]].Name, metav1.DeleteOptions{}))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		return h.hashes("ondel")[nodes[0]] == hash && h.hashes("ondel")[nodes[1]] != hash, nil
	})
	h.waitStatus("ondel", "one updated", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.UpdatedNumberScheduled == 1 && s.NumberAvailable == 2
	})
}

// TestProgressiveCreate: with daemonset.kruise.io/progressive-create-pod
// "true", the partition also holds back pods on nodes that have none:
// desired − updated − partition are created, lowest names first.
func TestProgressiveCreate(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(4, nil)
	h.start()
	h.sets.Create(h.newDS("prog", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Partition = ptr.To(intstr.FromInt32(3)) }),
		func(ds *appsv1alpha1.DaemonSet) {
			ds.Annotations = map[string]string{pub.DaemonSetProgressiveCreatePodKey: "true"}
		}))
	h.waitPlaced("prog", nodes[:1], "")
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := len(h.pods("prog")); n != 1 {
			return fmt.Errorf("%d pods, want 1 (4 desired, partition 3)", n)
		}
		return nil
	})
	h.waitStatus("prog", "1 of 4", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 4 && s.CurrentNumberScheduled == 1
	})
	h.sets.Modify("prog", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Partition = ptr.To(intstr.FromInt32(0)) }))
	h.waitPlaced("prog", nodes, "")
	h.waitStatus("prog", "settled", settled(4))
}

// TestInPlaceIfPossible: pods get the InPlaceUpdateReady gate; an image
// change keeps every pod (UID, node) and kwok restarts the container; a
// change beyond images recreates them.
func TestInPlaceIfPossible(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("ip", 3, rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Type = appsv1alpha1.InplaceRollingUpdateType }))
	h.waitStatus("ip", "settled", settled(3))
	for _, p := range before {
		assert.Contains(t, p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	}
	hash := h.rollTo("ip", imageV2)
	after := h.waitPlaced("ip", nodes, hash)
	h.waitStatus("ip", "settled in place", settled(3))
	for n, p := range h.waitPlaced("ip", nodes, hash) {
		assert.Equal(t, before[n].UID, p.UID, "updated in place")
		assert.Equal(t, imageV2, p.Spec.Containers[0].Image)
		assert.Contains(t, p.Annotations[pub.InPlaceUpdateStateKey], `"revision":"`+hash+`"`)
		require.NotEmpty(t, p.Status.ContainerStatuses)
		assert.Equal(t, imageV2, p.Status.ContainerStatuses[0].Image, "kwok restarted the container")
	}

	// An env change cannot be done in place: recreated.
	old := h.sets.Get("ip").Status.DaemonSetHash
	h.sets.Modify("ip", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	})
	ds := h.sets.WaitFor("ip", "new hash", func(ds *appsv1alpha1.DaemonSet) bool { return ds.Status.DaemonSetHash != old })
	for n, p := range h.waitPlaced("ip", nodes, ds.Status.DaemonSetHash) {
		assert.NotEqual(t, after[n].UID, p.UID, "recreated")
	}
	h.waitStatus("ip", "settled", settled(3))
}

func derefPods(ps []*corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(ps))
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}
