package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestLimitAvailable(t *testing.T) {
	pods := []*corev1.Pod{
		testPod("ok-1"),
		testPod("bad", notReady()),
		testPod("ok-2"),
		testPod("young", readyFor(5*time.Second)), // unavailable with minReadySeconds 10
		testPod("updating", inState(pub.LifecycleStateUpdating)),
		testPod("ok-3"),
	}
	for _, tc := range []struct {
		limit    int
		minReady int32
		want     []string
	}{
		// A ready pod costs as soon as it is ready: minReadySeconds plays no
		// part in this budget (OpenKruise's deleteReadyLimit counts ready pods).
		{limit: 0, minReady: 10, want: []string{"bad", "updating"}},
		{limit: 1, minReady: 10, want: []string{"ok-1", "bad", "updating"}},
		{limit: 3, minReady: 10, want: []string{"ok-1", "bad", "ok-2", "young", "updating"}},
		{limit: 9, minReady: 10, want: podNames(pods)},
		{limit: 1, minReady: 0, want: []string{"ok-1", "bad", "updating"}},
	} {
		cs := testCloneSet(6)
		cs.Spec.MinReadySeconds = tc.minReady
		got := limitAvailable(testState(cs, pods...), pods, tc.limit)
		assert.Equal(t, tc.want, podNames(got), "limit %d, minReadySeconds %d", tc.limit, tc.minReady)
	}
}

func TestChoosePodsToDelete(t *testing.T) {
	old := func(name string, opts ...podOpt) *corev1.Pod {
		return testPod(name, append([]podOpt{atRev(currentRev)}, opts...)...)
	}
	c := &Controller{}

	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		d        diffs
		minReady int32
		want     []string
	}{
		{
			name: "old revision first, up to scaleDownOld, then updated",
			pods: []*corev1.Pod{testPod("new-unscheduled", unscheduled()), old("old-a"), old("old-b", createdAgo(time.Hour)), testPod("new-a")},
			d:    diffs{scaleDown: 2, scaleDownOld: 1, deleteReadyLimit: 9},
			// old-b is newer than old-a; the unscheduled updated pod beats new-a.
			want: []string{"old-b", "new-unscheduled"},
		},
		{
			name: "scaleDownOld covers everything: updated pods untouched",
			pods: []*corev1.Pod{testPod("new-unscheduled", unscheduled()), old("old-a"), old("old-b"), old("old-c")},
			d:    diffs{scaleDown: 2, scaleDownOld: 3, deleteReadyLimit: 9},
			want: []string{"old-a", "old-b"},
		},
		{
			name: "scaleDownOld 0: only updated pods",
			pods: []*corev1.Pod{old("old-unscheduled", unscheduled()), testPod("new-a"), testPod("new-b", notReady())},
			d:    diffs{scaleDown: 1, deleteReadyLimit: 9},
			want: []string{"new-b"},
		},
		{
			// The diff never asks for more updated pods than there are; if it
			// did, no extra old pod is taken in their place (as OpenKruise).
			name: "too few updated pods: no more old ones",
			pods: []*corev1.Pod{old("old-a", deletionCost("5")), old("old-b"), old("old-c", deletionCost("9")), testPod("new-a")},
			d:    diffs{scaleDown: 3, scaleDownOld: 1, deleteReadyLimit: 9},
			want: []string{"old-b", "new-a"},
		},
		{
			// Same-node ranks count the group being trimmed only: old-a shares
			// "busy" with two updated pods, but among the old pods it is alone
			// there, so the more recently ready old-b goes first.
			name: "same-node rank within the group",
			pods: []*corev1.Pod{
				old("old-a", onNode("busy")), old("old-b", onNode("quiet"), readyFor(time.Minute)),
				testPod("new-a", onNode("busy")), testPod("new-b", onNode("busy")),
			},
			d:    diffs{scaleDown: 1, scaleDownOld: 1, deleteReadyLimit: 9},
			want: []string{"old-b"},
		},
		{
			name: "deletion order within a group",
			pods: []*corev1.Pod{
				testPod("ready-cost-0"),
				testPod("ready-cost-neg", deletionCost("-10")),
				testPod("not-ready", notReady()),
				testPod("pending", pending()),
				testPod("unscheduled", unscheduled()),
				testPod("ready-recently", readyFor(time.Minute)),
			},
			d:    diffs{scaleDown: 6, deleteReadyLimit: 9},
			want: []string{"unscheduled", "pending", "not-ready", "ready-cost-neg", "ready-recently", "ready-cost-0"},
		},
		{
			name:     "unavailable (minReadySeconds) before available",
			pods:     []*corev1.Pod{testPod("a-available"), testPod("b-young", readyFor(5*time.Second), deletionCost("100"))},
			d:        diffs{scaleDown: 1, deleteReadyLimit: 9},
			minReady: 10,
			want:     []string{"b-young"},
		},
		{
			name: "crowded node first",
			pods: []*corev1.Pod{testPod("a-alone", onNode("quiet")), testPod("b-crowded", onNode("busy")), testPod("c-crowded", onNode("busy"))},
			d:    diffs{scaleDown: 1, deleteReadyLimit: 9},
			want: []string{"b-crowded"},
		},
		{
			name: "more restarts, then newer first",
			pods: []*corev1.Pod{
				testPod("a-old"),
				testPod("b-new", createdAgo(time.Minute)),
				testPod("c-restarts", func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 3}}
				}),
			},
			d:    diffs{scaleDown: 2, deleteReadyLimit: 9},
			want: []string{"c-restarts", "b-new"},
		},
		{
			name: "deleteReadyLimit bounds available pods only",
			pods: []*corev1.Pod{testPod("a"), testPod("b"), testPod("c", notReady()), testPod("d")},
			d:    diffs{scaleDown: 3, deleteReadyLimit: 1},
			want: []string{"c", "a"}, // c (not ready) is free; of a and b (same age, name order) only one fits
		},
		{
			name: "deleteReadyLimit 0",
			pods: []*corev1.Pod{testPod("a"), testPod("b")},
			d:    diffs{scaleDown: 1},
			want: []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(1)
			cs.Spec.MinReadySeconds = tc.minReady
			st := testState(cs, tc.pods...)
			before := podNames(tc.pods)
			assert.Equal(t, tc.want, podNames(c.choosePodsToDelete(st, tc.d)))
			assert.Equal(t, before, podNames(st.pods), "st.pods reordered")
		})
	}
}

// v0.10 seed: with topologySpreadConstraints, scale-in takes pods from the
// most populated topology domain first ("higher spread rank < lower spread
// rank"), even over a pod that would go first on the other rules.
func TestChoosePodsToDeleteSpread(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, zone := range map[string]string{"a1": "a", "a2": "a", "b1": "b"} {
		require.NoError(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": zone}}}))
	}
	c := &Controller{nodes: corelisters.NewNodeLister(nodes)}
	pods := []*corev1.Pod{
		testPod("p-a1", onNode("a1")), testPod("p-a2", onNode("a2")),
		testPod("p-b1", onNode("b1"), readyFor(time.Minute)), // ready most recently: first without spread
	}
	cs := testCloneSet(2)
	d := diffs{scaleDown: 1, deleteReadyLimit: 9}
	assert.Equal(t, []string{"p-b1"}, podNames(c.choosePodsToDelete(testState(cs, pods...), d)), "no constraints")

	cs.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "zone", MaxSkew: 1}}
	assert.Equal(t, []string{"p-a1"}, podNames(c.choosePodsToDelete(testState(cs, pods...), d)), "zone a holds two pods")
}
