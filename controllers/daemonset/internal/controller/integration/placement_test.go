package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestPlacement: one pod per eligible node, placed by the scheduler through
// a required node affinity on metadata.name; a node that joins gets a pod;
// a node relabelled out or tainted NoExecute loses it (a NoSchedule taint
// keeps the running pod); a deleted node's pod goes; a failed pod is
// replaced; the status counts it all.
func TestPlacement(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(3, nil)
	h.start()
	ds := h.sets.Create(h.newDS("agent"))
	placed := h.waitPlaced("agent", nodes, "")
	for n, p := range placed {
		assert.Equal(t, n, nodeplacement.TargetNode(&p))
		require.NotNil(t, p.Spec.Affinity)
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		assert.Equal(t, []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}, terms[0].MatchFields)
		assert.True(t, metav1.IsControlledBy(&p, ds))
		assert.Contains(t, p.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, "daemon tolerations")
	}
	got := h.waitStatus("agent", "3 nodes settled", settled(3))
	assert.NotEmpty(t, got.Status.DaemonSetHash)

	// A node joins.
	more := h.nodes(1, nil)
	all := append(append([]string{}, nodes...), more...)
	h.waitPlaced("agent", all, got.Status.DaemonSetHash)
	h.waitStatus("agent", "4 nodes settled", settled(4))

	// A node is relabelled out: its pod goes.
	ctx := context.Background()
	h.Nodes().Modify(nodes[0], func(n *corev1.Node) { n.Labels[h.nodeLabel] = "elsewhere" })
	h.waitPlaced("agent", all[1:], "")
	h.waitStatus("agent", "3 desired after relabel", settled(3))

	// NoSchedule keeps the running pod; NoExecute evicts it.
	taint := func(name string, effect corev1.TaintEffect) {
		h.Nodes().Modify(name, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "flotilla.dev/ds-test-taint", Value: "x", Effect: effect})
		})
	}
	taint(nodes[1], corev1.TaintEffectNoSchedule)
	h.waitStatus("agent", "NoSchedule: not desired, pod kept (misscheduled)", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 2 && s.NumberMisscheduled == 1
	})
	assert.Len(t, h.byNode("agent")[nodes[1]], 1, "a NoSchedule taint does not evict")
	taint(nodes[2], corev1.TaintEffectNoExecute)
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.byNode("agent")[nodes[2]]) == 0, nil })

	// A failed pod is replaced.
	by := h.byNode("agent")
	victim := by[more[0]][0]
	victim.Status.Phase = corev1.PodFailed
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).UpdateStatus(ctx, &victim, metav1.UpdateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.byNode("agent")[more[0]]
		return len(ps) == 1 && ps[0].UID != victim.UID && testenv.PodReady(&ps[0]), nil
	})
	h.waitStatus("agent", "failed pod replaced", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 1 && s.NumberAvailable == 1 && s.NumberMisscheduled == 1
	})

	// A deleted node's pod goes (the pod garbage collector for a bound pod).
	require.NoError(t, h.Env.Kube.CoreV1().Nodes().Delete(ctx, more[0], metav1.DeleteOptions{}))
	h.waitStatus("agent", "node deleted", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 0 && s.CurrentNumberScheduled == 0
	})
}

// TestBurstReplicas: with burstReplicas 1 every sync creates at most one
// pod (TestManageBurst checks the cap); the DaemonSet still reaches every
// node.
func TestBurstReplicas(t *testing.T) {
	h := newHarness(t)
	h.place("burst", 3, func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(1))
	})
	h.waitStatus("burst", "3 nodes settled", settled(3))
}

// TestCordonedNodeRunsDaemon: a cordoned node still runs its daemon, as
// upstream's: every daemon pod tolerates node.kubernetes.io/unschedulable, and
// the scheduler lets it through.
func TestCordonedNodeRunsDaemon(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	h.Nodes().Modify(nodes[0], func(n *corev1.Node) { n.Spec.Unschedulable = true })
	h.start()
	h.sets.Create(h.newDS("cordon"))
	h.waitPlaced("cordon", nodes, "")
	h.waitStatus("cordon", "2 nodes settled", settled(2))
}

// TestDeletingNodeKeepsDaemon: a node being deleted — a finalizer holds it,
// as while an autoscaler drains it — keeps its daemon pod and stays in the
// status, as in upstream's and OpenKruise's DaemonSet (log and CNI daemons
// must outlive the drain); the node stops counting once it is gone.
func TestDeletingNodeKeepsDaemon(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("drain", 2)
	h.waitStatus("drain", "settled", settled(2))

	ctx := context.Background()
	const fin = "example.io/drain"
	draining := nodes[0]
	unblock := func() {
		_, err := h.Env.Kube.CoreV1().Nodes().Patch(context.Background(), draining, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("remove the finalizer of node %s: %v", draining, err)
		}
	}
	_, err := h.Env.Kube.CoreV1().Nodes().Patch(ctx, draining, types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+fin+`"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	t.Cleanup(unblock) // the node could not be deleted otherwise
	require.NoError(t, h.Env.Kube.CoreV1().Nodes().Delete(ctx, draining, metav1.DeleteOptions{}))

	// A node created after the deletion reaches the controller after it
	// (one ordered node watch): once the new node has its pod, the
	// controller has acted on the deletion too.
	joined := h.nodes(1, nil)
	all := append(append([]string{}, nodes...), joined...)
	placed := h.waitPlaced("drain", all, "")
	assert.Equal(t, before[draining].UID, placed[draining].UID, "the draining node keeps its pod")
	h.waitStatus("drain", "the draining node still counts", settled(3))

	// Once the node object is gone it no longer counts (its bound pod is
	// the pod garbage collector's, as upstream's).
	unblock()
	h.waitStatus("drain", "two nodes left", settled(2))
}
