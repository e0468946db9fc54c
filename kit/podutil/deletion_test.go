package podutil

import (
	"math"
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
				Rank:            func(p *corev1.Pod) float64 { return float64(ranks[p.Labels["rank"]]) },
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
		run("crowded", "n10"), // shares n10 with "keeper" and goes first there: rank 1
		run("recently-ready", "n4", func(p *corev1.Pod) { p.Status.Conditions = nil }, readyAt(ago(time.Minute))),
		run("restarting", "n5", restarts(0, 4)),
		run("new", "n6", created(ago(time.Minute))),
		run("old", "n7", created(ago(3*time.Hour))),
		run("old-b", "n8", created(ago(3*time.Hour))),
		run("keeper", "n10", created(ago(4*time.Hour))), // the last pod of n10: rank 0
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

		o := DeletionOrder{Rank: RankBySameNode(in), MinReadySeconds: 30, Now: t0}
		got := o.Sort(in)
		require.Equal(t, want, names(got))
		assert.Equal(t, inBefore, in, "input slice must not be reordered")
	}
	assert.Equal(t, snapshot, pods, "pods must not be modified")

	// SortForDeletion judges availability with minReadySeconds 0, so "fresh"
	// is available there and moves behind "cheap" (cost -5); it ties with
	// "crowded" on rank (1: the middle of n2's three pods, the first of
	// n10's two) and goes first as the more recently ready.
	got := names(SortForDeletion(pods, RankBySameNode(pods), t0))
	assert.Equal(t, []string{"ns/unscheduled", "ns/pending", "ns/unknown", "ns/not-ready", "ns/updating",
		"ns/cheap", "ns/fresh", "ns/crowded", "ns/recently-ready", "ns/restarting", "ns/new", "ns/old", "ns/old-b", "ns/keeper", "ns/expensive"}, got)
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

func TestRankBySameNode(t *testing.T) {
	ready := func(name, node string, age time.Duration) *corev1.Pod {
		return newPod(name, onNode(node), phase(corev1.PodRunning), readyAt(ago(age)), created(ago(2*time.Hour)))
	}
	// n1 holds three pods: the one to delete first there ranks 2, the one
	// that would go last ranks 0 — a crowded node keeps its last pod on
	// rank alone. A pod alone on its node and an unassigned pod rank 0.
	pods := []*corev1.Pod{
		ready("n1-old", "n1", time.Hour), ready("n1-new", "n1", time.Minute),
		newPod("n1-pending", onNode("n1"), phase(corev1.PodPending)),
		ready("n2-only", "n2", time.Hour),
		newPod("unassigned"),
	}
	rank := RankBySameNode(pods)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want float64
	}{
		{pods[2], 2}, {pods[1], 1}, {pods[0], 0},
		{pods[3], 0}, {pods[4], 0},
		{ready("stranger", "n1", time.Second), 0}, // not among the ranked pods
	} {
		assert.Equal(t, tc.want, rank(tc.pod), tc.pod.Name)
	}
	assert.Zero(t, RankBySameNode(nil)(newPod("x", onNode("n1"))))
}

// Ranks only within the group handed over: the same node counted across
// both revisions would make an old pod alone among old pods look crowded.
func TestRankBySameNodeWithinGroup(t *testing.T) {
	oldPod := newPod("old", onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Hour)))
	otherOld := newPod("other-old", onNode("n2"), phase(corev1.PodRunning), readyAt(ago(time.Minute)))
	updated := newPod("updated", onNode("n1"), phase(corev1.PodRunning), readyAt(ago(time.Minute)))
	all := RankBySameNode([]*corev1.Pod{oldPod, otherOld, updated})
	assert.Equal(t, 0.0, all(oldPod), "last on n1 among all pods")
	group := []*corev1.Pod{oldPod, otherOld}
	assert.Zero(t, RankBySameNode(group)(oldPod))
	assert.Equal(t, []string{"ns/other-old", "ns/old"}, names(SortForDeletion(group, RankBySameNode(group), t0)),
		"within the old group no node is crowded: the more recently ready goes first")
}

func TestRankBySpread(t *testing.T) {
	nodes := map[string]map[string]string{
		"a1": {"zone": "a", corev1.LabelHostname: "a1"},
		"a2": {"zone": "a", corev1.LabelHostname: "a2"},
		"b1": {"zone": "b", corev1.LabelHostname: "b1"},
		"x1": {corev1.LabelHostname: "x1"}, // no zone label
	}
	labels := func(n string) (map[string]string, bool) { l, ok := nodes[n]; return l, ok }
	at := func(name, node string, readyFor time.Duration) *corev1.Pod {
		return newPod(name, onNode(node), phase(corev1.PodRunning), readyAt(ago(readyFor)), created(ago(2*time.Hour)))
	}
	// Zone a holds three pods, zone b one: a's pods rank 3, 2, 1 — a1-new
	// first (within the zone it carries a same-node rank: it goes first on
	// a1), then a2 (more recently ready than a1-old) — b's pod 1, each
	// times ln(2 domains + 2).
	pods := []*corev1.Pod{
		at("a1-old", "a1", time.Hour), at("a1-new", "a1", time.Minute), at("a2", "a2", 30*time.Minute),
		at("b1", "b1", time.Hour), at("x1", "x1", time.Hour), at("lost", "gone", time.Hour),
	}
	w := math.Log(4)
	rank := RankBySpread(pods, []string{"zone"}, labels)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want float64
	}{
		{pods[1], 3 * w}, {pods[2], 2 * w}, {pods[0], 1 * w}, {pods[3], 1 * w},
		{pods[4], 0}, // its node has no zone
		{pods[5], 0}, // its node is unknown
	} {
		assert.InDelta(t, tc.want, rank(tc.pod), 1e-9, tc.pod.Name)
	}
	// v0.10 seed: "Higher spread rank < lower spread rank": the pods of the
	// most populated zone are deleted first.
	got := names(SortForDeletion(pods[:4], RankBySpread(pods[:4], []string{"zone"}, labels), t0))
	assert.Equal(t, []string{"ns/a1-new", "ns/a2", "ns/a1-old", "ns/b1"}, got)

	// Two keys add up: by hostname (each of 4 hosts is a domain, weight
	// ln 6) a1's pods rank 2 and 1, the others 1.
	both := RankBySpread(pods[:4], []string{"zone", corev1.LabelHostname}, labels)
	assert.InDelta(t, 3*w+2*math.Log(5), both(pods[1]), 1e-9)
	assert.InDelta(t, 1*w+1*math.Log(5), both(pods[3]), 1e-9)
}
