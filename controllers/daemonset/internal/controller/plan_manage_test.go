package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

func TestPlanManage(t *testing.T) {
	cases := []struct {
		name        string
		verdicts    map[string]nodeplacement.Verdict
		pods        []*corev1.Pod
		surge       bool
		partition   int
		progressive bool
		create      []string
		del         []string
		failed      []string
		desired     int
		updated     int
	}{
		{name: "nodes without a pod get one, sorted", verdicts: allRun("c", "a", "b"), pods: []*corev1.Pod{pod("p1", "b", "h2", 0)},
			create: []string{"a", "c"}, desired: 3, updated: 1},
		{name: "ineligible node loses its pod", verdicts: map[string]nodeplacement.Verdict{"a": evict}, pods: []*corev1.Pod{pod("p1", "a", "h2", 0)},
			del: []string{"p1"}},
		{name: "NoSchedule keeps the running pod, creates none", verdicts: map[string]nodeplacement.Verdict{"a": keep, "b": keep},
			pods: []*corev1.Pod{pod("p1", "a", "h2", 0)}},
		{name: "failed pod deleted through the back-off, succeeded deleted", verdicts: allRun("a", "b"),
			pods:   []*corev1.Pod{pod("p1", "a", "h2", 0, failed), pod("p2", "b", "h2", 0, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			failed: []string{"p1"}, del: []string{"p2"}, desired: 2, updated: 2},
		{name: "excess pods: all but the oldest go", verdicts: allRun("a"),
			pods: []*corev1.Pod{pod("young", "a", "h2", 5), pod("old", "a", "h1", 1), pod("mid", "a", "h2", 3)},
			del:  []string{"mid", "young"}, desired: 1},
		{name: "a pod being deleted blocks a new one", verdicts: allRun("a"), pods: []*corev1.Pod{pod("p1", "a", "h2", 0, deleting)}, desired: 1},
		{name: "a PreparingDelete pod is deleted (once its hook lets go)", verdicts: allRun("a"), pods: []*corev1.Pod{pod("p1", "a", "h1", 0, preDeleting)},
			del: []string{"p1"}, desired: 1},
		{name: "unscheduled pod of a node that is gone", verdicts: allRun("a"),
			pods: []*corev1.Pod{pod("p1", "a", "h2", 0), func() *corev1.Pod {
				p := pod("p2", "", "h2", 0)
				p.Spec.Affinity = nodeplacement.PinToNode(nil, "gone")
				return p
			}(), pod("bound", "gone2", "h2", 0)},
			del: []string{"p2"}, desired: 1, updated: 1},
		{name: "surge: old and new both kept while new unavailable", surge: true, verdicts: allRun("a"),
			pods: []*corev1.Pod{pod("old", "a", "h1", 0), pod("new", "a", "h2", 1, notReady)}, desired: 1, updated: 1},
		{name: "surge: old goes once the new one is available", surge: true, verdicts: allRun("a"),
			pods: []*corev1.Pod{pod("old", "a", "h1", 0), pod("new", "a", "h2", 1)}, del: []string{"old"}, desired: 1, updated: 1},
		{name: "surge: a not-ready old pod goes at once", surge: true, verdicts: allRun("a"),
			pods: []*corev1.Pod{pod("old", "a", "h1", 0, notReady), pod("new", "a", "h2", 1, notReady)}, del: []string{"old"}, desired: 1, updated: 1},
		{name: "progressive with partition: desired − updated − partition creations", verdicts: allRun("a", "b", "c", "d"),
			pods: []*corev1.Pod{pod("p1", "a", "h2", 0)}, partition: 2, progressive: true, create: []string{"b"}, desired: 4, updated: 1},
		{name: "partition without progressive does not hold creations", verdicts: allRun("a", "b", "c"),
			partition: 2, create: []string{"a", "b", "c"}, desired: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planManage(manageInput{nodes: state(tc.verdicts, tc.pods...), hash: "h2", surge: tc.surge, now: t0.Add(time.Hour),
				partition: tc.partition, progressive: tc.progressive})
			assert.Equal(t, tc.create, plan.create, "create")
			assert.ElementsMatch(t, tc.del, podNames(plan.delete), "delete")
			assert.ElementsMatch(t, tc.failed, podNames(plan.failed), "failed")
			assert.Equal(t, tc.desired, plan.desired, "desired")
			assert.Equal(t, tc.updated, plan.updated, "updated")
		})
	}
}

func TestProgressiveCreates(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	assert.Equal(t, []string{"a", "b", "c"}, progressiveCreates(nodes, 5, 0, 0))
	assert.Equal(t, []string{"a"}, progressiveCreates(nodes, 5, 1, 3))
	assert.Empty(t, progressiveCreates(nodes, 5, 3, 3))
	assert.Equal(t, []string{"a", "b", "c"}, progressiveCreates(nodes, 5, 0, -1), "a negative partition counts as 0")
}
