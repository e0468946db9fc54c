package podutil

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

// running, ready an hour ago, Normal: available with any minReadySeconds the tests use.
func availableOn(node string) []podOpt {
	return []podOpt{onNode(node), phase(corev1.PodRunning), readyAt(ago(time.Hour))}
}

func with(base []podOpt, more ...podOpt) []podOpt {
	return append(append([]podOpt{}, base...), more...)
}

// TestDeletionOrderRules checks each rule on two pods that differ by that rule
// only as far as the earlier rules go: the earlier rules tie, and every later
// rule (and the name tie-break) prefers the other pod. Hence each case fails if
// its rule is removed or reversed.
func TestDeletionOrderRules(t *testing.T) {
	// Settings that make a pod lose (be kept) on every rule from cost on.
	loseLater := []podOpt{cost("10"), restarts(0), created(ago(3 * time.Hour))}
	// ... and win (be deleted first) on every rule from cost on.
	winLater := []podOpt{cost("-10"), restarts(3), created(ago(time.Minute))}
	ranks := map[string]int{"winner-rank": 5, "loser-rank": 1}

	for _, tc := range []struct {
		rule          string
		minReady      int32
		first, second *corev1.Pod // first must be deleted before second
	}{
		{
			rule:   "1 unassigned before assigned",
			first:  newPod("z", with(loseLater, phase(corev1.PodRunning), readyAt(ago(2*time.Hour)))...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodPending), notReady(), label("rank", "winner-rank"))...),
		},
		{
			rule:   "2 Pending before Unknown",
			first:  newPod("z", with(loseLater, onNode("n1"), phase(corev1.PodPending), readyAt(ago(2*time.Hour)))...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodUnknown), notReady(), label("rank", "winner-rank"))...),
		},
		{
			rule:   "2 no phase ranks as Pending, before Unknown",
			first:  newPod("z", with(loseLater, onNode("n1"), readyAt(ago(2*time.Hour)))...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodUnknown), notReady(), label("rank", "winner-rank"))...),
		},
		{
			rule:   "2 Unknown before Running",
			first:  newPod("z", with(loseLater, onNode("n1"), phase(corev1.PodUnknown), readyAt(ago(2*time.Hour)))...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodRunning), notReady(), label("rank", "winner-rank"))...),
		},
		{
			rule:   "3 unavailable (lifecycle not Normal) before available",
			first:  newPod("z", with(loseLater, onNode("n1"), phase(corev1.PodRunning), readyAt(ago(2*time.Hour)), lifecycle(pub.LifecycleStatePreparingUpdate))...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Minute)), lifecycle(pub.LifecycleStateNormal), label("rank", "winner-rank"))...),
		},
		{
			rule:     "3 unavailable (ready < minReadySeconds) before available",
			minReady: 60,
			first:    newPod("z", with(loseLater, onNode("n1"), phase(corev1.PodRunning), readyAt(ago(30*time.Second)))...),
			second:   newPod("a", with(winLater, onNode("n1"), phase(corev1.PodRunning), readyAt(ago(2*time.Minute)), label("rank", "winner-rank"))...),
		},
		{
			rule:   "4 not ready before ready (both unavailable)",
			first:  newPod("z", with(loseLater, onNode("n1"), phase(corev1.PodRunning), notReady())...),
			second: newPod("a", with(winLater, onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Minute)), lifecycle(pub.LifecycleStateUpdating), label("rank", "winner-rank"))...),
		},
		{
			rule:   "5 lower deletion cost first",
			first:  newPod("z", with(availableOn("n1"), cost("-1"), restarts(0), created(ago(3*time.Hour)))...),
			second: newPod("a", with(availableOn("n1"), cost("0"), restarts(3), created(ago(time.Minute)), label("rank", "winner-rank"))...),
		},
		{
			rule:   "5 invalid deletion cost counts as 0",
			first:  newPod("z", with(availableOn("n1"), cost("+5"), restarts(0), created(ago(3*time.Hour)))...),
			second: newPod("a", with(availableOn("n1"), cost("1"), restarts(3), created(ago(time.Minute)), label("rank", "winner-rank"))...),
		},
		{
			rule:   "6 higher rank first",
			first:  newPod("z", with(availableOn("n1"), label("rank", "winner-rank"), restarts(0), created(ago(3*time.Hour)))...),
			second: newPod("a", with([]podOpt{onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Minute))}, label("rank", "loser-rank"), restarts(3), created(ago(time.Minute)))...),
		},
		{
			rule:   "7 ready more recently first",
			first:  newPod("z", onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Minute)), restarts(0), created(ago(3*time.Hour))),
			second: newPod("a", onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Hour)), restarts(3), created(ago(time.Minute))),
		},
		{
			rule:   "7 ready without transition time counts as most recent",
			first:  newPod("z", onNode("n1"), phase(corev1.PodRunning), readyAt(time.Time{}), restarts(0), created(ago(3*time.Hour))),
			second: newPod("a", onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Second)), restarts(3), created(ago(time.Minute))),
		},
		{
			rule:   "8 more restarts (the most of any one container) first",
			first:  newPod("z", with(availableOn("n1"), restarts(0, 3), created(ago(3*time.Hour)))...),
			second: newPod("a", with(availableOn("n1"), restarts(2, 2), created(ago(time.Minute)))...),
		},
		{
			rule:   "9 newer first",
			first:  newPod("z", with(availableOn("n1"), created(ago(time.Minute)))...),
			second: newPod("a", with(availableOn("n1"), created(ago(time.Hour)))...),
		},
		{
			rule:   "9 no creation timestamp counts as newest",
			first:  newPod("z", availableOn("n1")...),
			second: newPod("a", with(availableOn("n1"), created(ago(time.Second)))...),
		},
		{
			rule:   "10 name tie-break",
			first:  newPod("a", with(availableOn("n1"), created(ago(time.Hour)))...),
			second: newPod("b", with(availableOn("n1"), created(ago(time.Hour)))...),
		},
		{
			rule:   "10 namespace tie-break",
			first:  newPod("a", with(availableOn("n1"), created(ago(time.Hour)), func(p *corev1.Pod) { p.Namespace = "a" })...),
			second: newPod("a", with(availableOn("n1"), created(ago(time.Hour)), func(p *corev1.Pod) { p.Namespace = "b" })...),
		},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			o := DeletionOrder{
				Rank:            func(p *corev1.Pod) int { return ranks[p.Labels["rank"]] },
				MinReadySeconds: tc.minReady,
				Now:             t0,
			}
			assert.True(t, o.Less(tc.first, tc.second), "Less(first, second)")
			assert.False(t, o.Less(tc.second, tc.first), "Less(second, first)")
			want := []*corev1.Pod{tc.first, tc.second}
			assert.Equal(t, want, o.Sort([]*corev1.Pod{tc.first, tc.second}))
			assert.Equal(t, want, o.Sort([]*corev1.Pod{tc.second, tc.first}))
		})
	}
}

func TestDeletionOrderReadyRecencyOnlyWhenBothReady(t *testing.T) {
	// Both not ready: the Ready condition's transition time must not matter;
	// the newer pod goes first.
	older := newPod("a", onNode("n1"), phase(corev1.PodRunning),
		condition(corev1.PodReady, corev1.ConditionFalse, ago(time.Second)), created(ago(time.Hour)))
	newer := newPod("b", onNode("n1"), phase(corev1.PodRunning),
		condition(corev1.PodReady, corev1.ConditionFalse, ago(time.Hour)), created(ago(time.Minute)))
	assert.Equal(t, []*corev1.Pod{newer, older}, SortForDeletion([]*corev1.Pod{older, newer}, nil, t0))
}

func TestSortForDeletionCombined(t *testing.T) {
	run := func(name, node string, opts ...podOpt) *corev1.Pod {
		return newPod(name, with([]podOpt{onNode(node), phase(corev1.PodRunning), readyAt(ago(time.Hour)), created(ago(2 * time.Hour))}, opts...)...)
	}
	pods := []*corev1.Pod{
		newPod("unscheduled", phase(corev1.PodPending), created(ago(2*time.Hour))),
		newPod("pending", onNode("n1"), phase(corev1.PodPending), created(ago(2*time.Hour))),
		newPod("unknown", onNode("n1"), phase(corev1.PodUnknown), readyAt(ago(time.Hour)), created(ago(2*time.Hour))),
		run("not-ready", "n2", func(p *corev1.Pod) { p.Status.Conditions = nil }, notReady()),
		run("fresh", "n2", func(p *corev1.Pod) { p.Status.Conditions = nil }, readyAt(ago(10*time.Second))), // < minReadySeconds
		run("updating", "n2", lifecycle(pub.LifecycleStateUpdating)),
		run("cheap", "n3", cost("-5")),
		run("crowded", "n1"), // n1 holds 3 pods
		run("recently-ready", "n4", func(p *corev1.Pod) { p.Status.Conditions = nil }, readyAt(ago(time.Minute))),
		run("restarting", "n5", restarts(0, 4)),
		run("new", "n6", created(ago(time.Minute))),
		run("old", "n7", created(ago(3*time.Hour))),
		run("old-b", "n8", created(ago(3*time.Hour))),
		run("expensive", "n9", cost("5"), restarts(9), created(ago(time.Second))),
	}
	want := make([]string, len(pods))
	for i, p := range pods {
		want[i] = "ns/" + p.Name
	}
	snapshot := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		snapshot[i] = p.DeepCopy()
	}

	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		in := append([]*corev1.Pod(nil), pods...)
		r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		inBefore := append([]*corev1.Pod(nil), in...)

		o := DeletionOrder{Rank: RankByNodeCount(in), MinReadySeconds: 30, Now: t0}
		got := o.Sort(in)
		require.Equal(t, want, names(got))
		assert.Equal(t, inBefore, in, "input slice must not be reordered")
	}
	assert.Equal(t, snapshot, pods, "pods must not be modified")

	// SortForDeletion judges availability with minReadySeconds 0, so "fresh"
	// is available there and moves behind "cheap" (cost -5); it ties with
	// "crowded" on rank (n1 and n2 both hold 3 pods) and goes first as the
	// more recently ready.
	got := names(SortForDeletion(pods, RankByNodeCount(pods), t0))
	assert.Equal(t, []string{"ns/unscheduled", "ns/pending", "ns/unknown", "ns/not-ready", "ns/updating",
		"ns/cheap", "ns/fresh", "ns/crowded", "ns/recently-ready", "ns/restarting", "ns/new", "ns/old", "ns/old-b", "ns/expensive"}, got)
}

func TestSortForDeletionEdgeCases(t *testing.T) {
	assert.Empty(t, SortForDeletion(nil, nil, t0))
	p := newPod("only")
	in := []*corev1.Pod{p}
	out := SortForDeletion(in, nil, t0)
	assert.Equal(t, in, out)
	out[0] = nil
	assert.Same(t, p, in[0], "result must be a new slice")

	// Identical keys keep input order (names and namespaces equal).
	a, b := newPod("x"), newPod("x")
	got := SortForDeletion([]*corev1.Pod{a, b}, nil, t0)
	assert.Same(t, a, got[0])
	assert.Same(t, b, got[1])
	got = SortForDeletion([]*corev1.Pod{b, a}, nil, t0)
	assert.Same(t, b, got[0])
}

func TestRankByNodeCount(t *testing.T) {
	pods := []*corev1.Pod{
		newPod("a", onNode("n1")), newPod("b", onNode("n1")), newPod("c", onNode("n1")),
		newPod("d", onNode("n2")),
		newPod("e"), newPod("f"),
	}
	rank := RankByNodeCount(pods)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
	}{
		{pods[0], 3}, {pods[2], 3}, {pods[3], 1},
		{pods[4], 0}, // unassigned pods are not counted as sharing a node
		{newPod("elsewhere", onNode("n3")), 0},
		{newPod("late", onNode("n2")), 1}, // counts are fixed when the rank func is built
	} {
		assert.Equal(t, tc.want, rank(tc.pod), tc.pod.Name)
	}
	assert.Equal(t, 0, RankByNodeCount(nil)(newPod("x", onNode("n1"))))
}
