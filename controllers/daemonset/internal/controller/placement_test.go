package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// TestPlacementCache: verdicts are computed once per DaemonSet generation
// and node change, not per sync (OpenKruise #1011).
func TestPlacementCache(t *testing.T) {
	node := func(name string, l map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	nodes := []*corev1.Node{node("a", map[string]string{"run": "yes"}), node("b", nil), node("c", map[string]string{"run": "yes"})}
	ds := dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"run": "yes"} })
	p := newPlacementCache()
	v := p.verdicts(klog.Background(), ds, nodes)
	assert.True(t, v["a"].ShouldRun)
	assert.False(t, v["b"].ShouldRun)
	assert.Equal(t, uint64(3), p.evaluations.Load())

	for range 10 {
		p.verdicts(klog.Background(), ds, nodes)
	}
	assert.Equal(t, uint64(3), p.evaluations.Load(), "syncs of the same generation reuse the verdicts")

	nodes[1] = node("b", map[string]string{"run": "yes"})
	p.nodeChanged("b")
	v = p.verdicts(klog.Background(), ds, nodes)
	assert.True(t, v["b"].ShouldRun)
	assert.Equal(t, uint64(4), p.evaluations.Load(), "a node change recomputes that node only")

	ds2 := ds.DeepCopy()
	ds2.Generation = 2
	ds2.Spec.Template.Spec.NodeSelector = nil
	p.verdicts(klog.Background(), ds2, nodes)
	assert.Equal(t, uint64(7), p.evaluations.Load(), "a new generation recomputes every node")

	p.forget(ds.UID)
	p.verdicts(klog.Background(), ds2, nodes)
	assert.Equal(t, uint64(10), p.evaluations.Load())
}

// TestDeletingNodeStaysEligible: a node with a deletionTimestamp (a
// finalizer holds it while an autoscaler drains it) keeps its daemon, as in
// upstream's and OpenKruise's DaemonSet; the cached node is not modified.
func TestDeletingNodeStaysEligible(t *testing.T) {
	deleting := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"run": "yes"},
		DeletionTimestamp: ptr.To(metav1.NewTime(t0)), Finalizers: []string{"example.io/drain"}}}
	cases := []struct {
		name string
		ds   *appsv1alpha1.DaemonSet
		want bool
	}{
		{"eligible otherwise: stays eligible", dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"run": "yes"} }), true},
		{"ineligible otherwise: stays ineligible", dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"run": "no"} }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newPlacementCache().verdicts(klog.Background(), tc.ds, []*corev1.Node{deleting})
			assert.Equal(t, tc.want, v["a"].ShouldRun, v["a"].Reason)
			assert.Equal(t, tc.want, v["a"].ShouldContinueRunning, v["a"].Reason)
			assert.NotNil(t, deleting.DeletionTimestamp, "the cached node is not modified")
		})
	}
}

func TestDaemonTolerations(t *testing.T) {
	spec := &corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
		{Key: "user", Operator: corev1.TolerationOpExists},
	}}
	addDaemonTolerations(spec)
	assert.Len(t, spec.Tolerations, 8, "6 daemon tolerations + network-unavailable for host network + the user's")
	assert.Nil(t, spec.Tolerations[0].TolerationSeconds, "the not-ready toleration is made unlimited in place")
	assert.Equal(t, "user", spec.Tolerations[1].Key)
}
