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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// withPreDelete hooks every pod: the template carries the hook's label
// (lab.HookLabel).
func withPreDelete(ds *appsv1alpha1.DaemonSet) {
	lab.AddHook(&ds.Spec.Lifecycle, ds.Spec.Template.Labels, "preDelete", false)
}

// preparing returns the pods of name in PreparingDelete.
func (h *harness) preparing(name string) []corev1.Pod {
	return lab.InState(h.pods(name), pub.LifecycleStatePreparingDelete)
}

// TestPreDeleteRecreateUpdate: a recreate update moves a hooked pod to
// PreparingDelete instead of deleting it. Without markPodNotReady that pod
// is still Ready and serving, and status.numberAvailable counts it, as
// OpenKruise's does; the rolling update's budget does not (it is on its way
// out), so with maxUnavailable 1 the other node waits. Releasing the hook
// lets the pod go and the update go on.
func TestPreDeleteRecreateUpdate(t *testing.T) {
	h := newHarness(t)
	nodes, _ := h.place("hook", 2, withPreDelete)
	h.waitStatus("hook", "settled", settled(2))
	hash := h.rollTo("hook", imageV2)

	var first corev1.Pod
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("hook")
		if len(ps) == 1 {
			first = ps[0]
		}
		return len(ps) == 1, nil
	})
	// A node joining now gets an updated pod. The status that counts it was
	// computed after the controller saw its own PreparingDelete write (it
	// waits for its writes to reach the cache), so it shows how that pod
	// counts: Ready and available.
	joined := h.nodes(1, nil)
	all := append(append([]string{}, nodes...), joined...)
	got := h.waitStatus("hook", "the joined node's pod counted", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 3 && s.CurrentNumberScheduled == 3 && s.UpdatedNumberScheduled == 1 && s.NumberReady == 3
	})
	assert.Equal(t, int32(3), got.Status.NumberAvailable, "the Ready PreparingDelete pod counts as available")
	assert.Equal(t, int32(0), got.Status.NumberUnavailable)
	testenv.Consistently(t, 2*time.Second, func() error {
		if ps := h.pods("hook"); len(ps) != 3 || len(h.preparing("hook")) != 1 {
			return fmt.Errorf("while the hook holds: %d pods, %d preparing (the budget counts the preparing pod as unavailable)", len(ps), len(h.preparing("hook")))
		}
		return nil
	})

	h.Release(first.Name)
	var second corev1.Pod
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("hook")
		if len(ps) == 1 && ps[0].Name != first.Name {
			second = ps[0]
			return true, nil
		}
		return false, nil
	})
	h.Release(second.Name)
	h.waitPlaced("hook", all, hash)
	h.waitStatus("hook", "settled", settled(3))
}

// TestPreDeleteScaleIn: a node relabelled out of the DaemonSet keeps its
// hooked pod in PreparingDelete until the finalizer hook is released.
func TestPreDeleteScaleIn(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	h.start()
	const fin = "example.io/drain"
	h.sets.Create(h.newDS("fin", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{fin}}}
		ds.Spec.Template.Finalizers = []string{fin}
	}))
	placed := h.waitPlaced("fin", nodes, "")
	t.Cleanup(func() { // every pod carries the finalizer: it would keep the namespace Terminating for good
		pods, _ := h.Env.Kube.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			_, _ = h.Env.Kube.CoreV1().Pods(h.NS).Patch(context.Background(), p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	h.Nodes().Modify(nodes[0], func(n *corev1.Node) { n.Labels[h.nodeLabel] = "out" })
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.preparing("fin")) == 1, nil })
	p := h.preparing("fin")[0]
	assert.Equal(t, placed[nodes[0]].UID, p.UID)
	assert.Nil(t, p.DeletionTimestamp, "not deleted while the hook holds")
	h.PatchPod(p.Name, `{"metadata":{"finalizers":null}}`)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.byNode("fin")[nodes[0]]) == 0, nil })
	h.waitStatus("fin", "one node left", settled(1))
}

// TestPreDeleteMarkPodNotReady: pods carry the KruisePodReady gate (Ready
// once the controller sets it True); with markPodNotReady a pod moved
// to PreparingDelete turns NotReady at once, so it leaves its Services
// before anything else happens to it.
func TestPreDeleteMarkPodNotReady(t *testing.T) {
	h := newHarness(t)
	nodes, placed := h.place("mark", 1, withPreDelete, func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Lifecycle.PreDelete.MarkPodNotReady = true })
	assert.Contains(t, placed[nodes[0]].Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	h.rollTo("mark", imageV2)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("mark")
		return len(ps) == 1 && !testenv.PodReady(&ps[0]) &&
			testenv.ConditionStatus(&ps[0], pub.KruisePodReadyConditionType) == corev1.ConditionFalse, nil
	})
	h.Release(h.preparing("mark")[0].Name)
	h.waitPlaced("mark", nodes, h.sets.Get("mark").Status.DaemonSetHash)
}

// TestMarkPodNotReadyTurnedOnLater: every pod carries the KruisePodReady
// readiness gate, as OpenKruise's pod webhook injects it into every pod of
// its workloads (and the pods become Ready: the controller sets the
// condition), so markPodNotReady turned on after the pods were created
// still takes a PreparingDelete pod out of its Services. A readiness gate
// cannot be added to a running pod.
func TestMarkPodNotReadyTurnedOnLater(t *testing.T) {
	h := newHarness(t)
	nodes, placed := h.place("later", 1, withPreDelete)
	require.Contains(t, placed[nodes[0]].Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType},
		"created without markPodNotReady, the pod still carries the gate")
	assert.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(ptr.To(placed[nodes[0]]), pub.KruisePodReadyConditionType))

	h.sets.Modify("later", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Lifecycle.PreDelete.MarkPodNotReady = true
		setImage(imageV2)(ds)
	})
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("later")
		return len(ps) == 1 && ps[0].UID == placed[nodes[0]].UID && !testenv.PodReady(&ps[0]) &&
			testenv.ConditionStatus(&ps[0], pub.KruisePodReadyConditionType) == corev1.ConditionFalse, nil
	})
	h.Release(h.preparing("later")[0].Name)
	h.waitPlaced("later", nodes, h.sets.Get("later").Status.DaemonSetHash)
}
