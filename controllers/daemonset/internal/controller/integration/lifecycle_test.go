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

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const blockLabel = "example.io/block-deleting"

// withPreDelete hooks every pod: the template carries the hook's label.
func withPreDelete(ds *appsv1alpha1.DaemonSet) {
	ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{blockLabel: "true"}}}
	ds.Spec.Template.Labels[blockLabel] = "true"
}

// preparing returns the pods of name in PreparingDelete.
func (h *harness) preparing(name string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range h.pods(name) {
		if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) {
			out = append(out, p)
		}
	}
	return out
}

func (h *harness) release(p corev1.Pod) {
	h.t.Helper()
	h.env.PatchPod(h.t, h.ns, p.Name, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, blockLabel))
}

// TestPreDeleteRecreateUpdate: a recreate update moves a hooked pod to
// PreparingDelete instead of deleting it; that pod counts as unavailable,
// so with maxUnavailable 1 the other node waits; releasing the hook lets
// the pod go and the update go on.
func TestPreDeleteRecreateUpdate(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	h.start()
	h.sets.Create(h.newDS("hook", withPreDelete))
	h.waitPlaced("hook", nodes, "")
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
	h.waitStatus("hook", "the preparing pod is unavailable", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.NumberAvailable == 1 && s.NumberUnavailable == 1
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if ps := h.pods("hook"); len(ps) != 2 || len(h.preparing("hook")) != 1 {
			return fmt.Errorf("while the hook holds: %d pods, %d preparing", len(ps), len(h.preparing("hook")))
		}
		return nil
	})

	h.release(first)
	var second corev1.Pod
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("hook")
		if len(ps) == 1 && ps[0].Name != first.Name {
			second = ps[0]
			return true, nil
		}
		return false, nil
	})
	h.release(second)
	h.waitPlaced("hook", nodes, hash)
	h.waitStatus("hook", "settled", settled(2))
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
	ctx := context.Background()
	n, err := h.env.Kube.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
	require.NoError(t, err)
	n.Labels[h.nodeLabel] = "out"
	_, err = h.env.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.preparing("fin")) == 1, nil })
	p := h.preparing("fin")[0]
	assert.Equal(t, placed[nodes[0]].UID, p.UID)
	assert.Nil(t, p.DeletionTimestamp, "not deleted while the hook holds")
	t.Cleanup(func() { // the finalizer would keep the namespace alive
		_, _ = h.env.Kube.CoreV1().Pods(h.ns).Patch(context.Background(), p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	h.env.PatchPod(t, h.ns, p.Name, `{"metadata":{"finalizers":null}}`)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.byNode("fin")[nodes[0]]) == 0, nil })
	h.waitStatus("fin", "one node left", settled(1))
}

// TestPreDeleteMarkPodNotReady: with markPodNotReady, pods carry the
// KruisePodReady gate (Ready once the controller sets it True); a pod moved
// to PreparingDelete turns NotReady at once, so it leaves its Services
// before anything else happens to it.
func TestPreDeleteMarkPodNotReady(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(1, nil)
	h.start()
	h.sets.Create(h.newDS("mark", withPreDelete, func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Lifecycle.PreDelete.MarkPodNotReady = true }))
	placed := h.waitPlaced("mark", nodes, "")
	assert.Contains(t, placed[nodes[0]].Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	h.rollTo("mark", imageV2)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.preparing("mark")
		return len(ps) == 1 && !testenv.PodReady(&ps[0]) &&
			testenv.ConditionStatus(&ps[0], pub.KruisePodReadyConditionType) == corev1.ConditionFalse, nil
	})
	h.release(h.preparing("mark")[0])
	h.waitPlaced("mark", nodes, h.sets.Get("mark").Status.DaemonSetHash)
}
