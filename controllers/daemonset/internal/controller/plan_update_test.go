package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

func TestNodesToUpdate(t *testing.T) {
	zone := map[string]map[string]string{"a": {"zone": "x"}, "b": {"zone": "y"}, "c": {"zone": "x"}, "d": {"zone": "y"}}
	cases := []struct {
		name      string
		verdicts  map[string]nodeplacement.Verdict
		pods      []*corev1.Pod
		partition int
		selector  string
		prune     bool
		want      []string
	}{
		{name: "reverse name order", verdicts: allRun("a", "b", "c"),
			pods: []*corev1.Pod{pod("pa", "a", "h1", 0), pod("pb", "b", "h1", 0), pod("pc", "c", "h1", 0)}, want: []string{"c", "b", "a"}},
		{name: "updated first, then updating, then the rest", verdicts: allRun("a", "b", "c", "d"),
			pods: []*corev1.Pod{pod("pa", "a", "h2", 0), pod("pb", "b", "h1", 0, preDeleting), pod("pd", "d", "h1", 0)},
			want: []string{"a", "c", "b", "d"}},
		{name: "partition keeps the lowest names old", verdicts: allRun("a", "b", "c", "d"),
			pods:      []*corev1.Pod{pod("pa", "a", "h1", 0), pod("pb", "b", "h1", 0), pod("pc", "c", "h1", 0), pod("pd", "d", "h1", 0)},
			partition: 3, want: []string{"d"}},
		{name: "partition counts updated nodes first", verdicts: allRun("a", "b", "c", "d"),
			pods:      []*corev1.Pod{pod("pa", "a", "h2", 0), pod("pb", "b", "h1", 0), pod("pc", "c", "h1", 0), pod("pd", "d", "h1", 0)},
			partition: 2, want: []string{"a", "d"}},
		{name: "partition ≥ nodes: nothing", verdicts: allRun("a", "b"), pods: []*corev1.Pod{pod("pa", "a", "h1", 0)}, partition: 2},
		{name: "selector: only matching old nodes", verdicts: allRun("a", "b", "c", "d"),
			pods:     []*corev1.Pod{pod("pa", "a", "h1", 0), pod("pb", "b", "h1", 0), pod("pc", "c", "h1", 0), pod("pd", "d", "h2", 0)},
			selector: "zone=x", want: []string{"d", "c", "a"}},
		{name: "pruned: an ineligible node keeping its pod is left out", prune: true, verdicts: map[string]nodeplacement.Verdict{"a": run, "b": keep},
			pods: []*corev1.Pod{pod("pa", "a", "h1", 0), pod("pb", "b", "h1", 0)}, want: []string{"a"}},
		{name: "not pruned: it is updated too", verdicts: map[string]nodeplacement.Verdict{"a": run, "b": keep},
			pods: []*corev1.Pod{pod("pa", "a", "h1", 0), pod("pb", "b", "h1", 0)}, want: []string{"b", "a"}},
		{name: "nodes that should not run and have no pod are not counted", verdicts: map[string]nodeplacement.Verdict{"a": run, "b": evict},
			pods: []*corev1.Pod{pod("pa", "a", "h1", 0)}, want: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := updateInput{nodes: state(tc.verdicts, tc.pods...), hash: "h2", partition: tc.partition, pruneIneligible: tc.prune,
				nodeLabels: func(n string) map[string]string { return zone[n] }}
			if tc.selector != "" {
				in.selector = labels.SelectorFromSet(labels.Set{"zone": "x"})
			}
			var got []string
			for _, st := range nodesToUpdate(in) {
				got = append(got, st.name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPlanRollingUpdate(t *testing.T) {
	now := t0.Add(time.Hour)
	five := allRun("a", "b", "c", "d", "e")
	old := func(n string, opts ...func(*corev1.Pod)) *corev1.Pod { return pod("old-"+n, n, "h1", 0, opts...) }
	upd := func(n string, opts ...func(*corev1.Pod)) *corev1.Pod { return pod("new-"+n, n, "h2", 10, opts...) }
	cases := []struct {
		name                     string
		pods                     []*corev1.Pod
		maxSurge, maxUnavailable int
		replace, create          []string
	}{
		{name: "maxUnavailable 2: two old pods, highest names first", maxUnavailable: 2,
			pods: []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), old("e")}, replace: []string{"old-e", "old-d"}},
		{name: "an unavailable updated pod uses the budget", maxUnavailable: 2,
			pods: []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), upd("e", notReady)}, replace: []string{"old-d"}},
		{name: "a node without a pod uses the budget", maxUnavailable: 1,
			pods: []*corev1.Pod{old("a"), old("b"), old("c"), old("d")}},
		{name: "unavailable old pods are always replaced", maxUnavailable: 1,
			pods: []*corev1.Pod{old("a", notReady), old("b", notReady), old("c"), upd("d", notReady), upd("e")}, replace: []string{"old-b", "old-a"}},
		{name: "a PreparingDelete updated pod is unavailable", maxUnavailable: 1,
			pods: []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), upd("e", preDeleting)}},
		{name: "surge 2: new pods next to available old ones", maxSurge: 2,
			pods: []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), old("e")}, create: []string{"e", "d"}},
		{name: "surge: a surging node uses the budget; an available new pod frees its old one", maxSurge: 1,
			pods:    []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), upd("d", notReady), old("e"), upd("e")},
			replace: []string{"old-e"}},
		{name: "surge: unavailable old pods get a new pod at once", maxSurge: 1,
			pods:   []*corev1.Pod{old("a", notReady), old("b"), old("c"), old("d"), old("e"), upd("e", notReady)},
			create: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planRollingUpdate(updateInput{nodes: state(five, tc.pods...), hash: "h2", now: now,
				maxSurge: tc.maxSurge, maxUnavailable: tc.maxUnavailable})
			assert.Equal(t, tc.replace, nilIfEmpty(podNames(plan.replace)), "replace")
			assert.Equal(t, tc.create, plan.create, "create")
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
