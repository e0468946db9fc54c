package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestLimitUpdates(t *testing.T) {
	ok := func(name string) *corev1.Pod { return testPod(name, atRev(currentRev)) }
	bad := func(name string) *corev1.Pod { return testPod(name, atRev(currentRev), notReady()) }
	young := func(name string) *corev1.Pod { return testPod(name, atRev(currentRev), readyFor(5*time.Second)) }
	badNew := func(name string) *corev1.Pod { return testPod(name, notReady()) } // at the update revision

	for _, tc := range []struct {
		name           string
		all            []*corev1.Pod // st.pods
		candidates     []string      // names, in order, from all
		n              int
		maxUnavailable int
		minReady       int32
		want           []string
	}{
		{
			name: "n caps the count",
			all:  []*corev1.Pod{ok("a"), ok("b"), ok("c"), ok("d")}, candidates: []string{"a", "b", "c", "d"},
			n: 2, maxUnavailable: 4,
			want: []string{"a", "b"},
		},
		{
			name: "maxUnavailable budget: 2 of 4 available pods",
			all:  []*corev1.Pod{ok("a"), ok("b"), ok("c"), ok("d")}, candidates: []string{"a", "b", "c", "d"},
			n: 4, maxUnavailable: 2,
			want: []string{"a", "b"},
		},
		{
			name: "an unavailable pod that is not a candidate uses budget",
			all:  []*corev1.Pod{ok("a"), ok("b"), ok("c"), bad("x")}, candidates: []string{"a", "b", "c"},
			n: 3, maxUnavailable: 2,
			want: []string{"a"},
		},
		{
			name: "already unavailable candidates cost nothing",
			all:  []*corev1.Pod{bad("x"), bad("y"), ok("a"), ok("b")}, candidates: []string{"x", "y", "a", "b"},
			n: 4, maxUnavailable: 4,
			want: []string{"x", "y", "a", "b"}, // 2 unavailable already, a makes 3, b makes 4; 4 updated this pass
		},
		{
			name: "already unavailable candidates cost nothing, available ones do",
			all:  []*corev1.Pod{bad("x"), ok("a"), ok("b"), ok("c")}, candidates: []string{"x", "a", "b"},
			n: 3, maxUnavailable: 3,
			want: []string{"x", "a", "b"}, // x costs nothing of the all-revisions budget: a makes 2, b 3
		},
		{
			name: "budget already spent: nothing, not even after an unavailable one",
			all:  []*corev1.Pod{bad("x"), ok("a"), bad("y")}, candidates: []string{"a", "y"},
			n: 2, maxUnavailable: 2,
			want: []string{},
		},
		{
			// Five crash-looping old pods, maxUnavailable 1: one is updated per
			// pass, so a template that does not fix the crash is not rolled
			// onto every pod at once.
			name: "unavailable candidates: updated this pass count",
			all:  []*corev1.Pod{bad("a"), bad("b"), bad("c"), bad("d"), bad("e")}, candidates: []string{"a", "b", "c", "d", "e"},
			n: 5, maxUnavailable: 1,
			want: []string{"a"},
		},
		{
			name: "unavailable pods at the target revision spend the budget",
			all:  []*corev1.Pod{badNew("n1"), bad("x"), bad("y"), ok("a")}, candidates: []string{"x", "y", "a"},
			n: 3, maxUnavailable: 2,
			want: []string{"x"}, // n1 (target, unavailable) + x make 2
		},
		{
			name: "maxUnavailable 0 updates nothing",
			all:  []*corev1.Pod{bad("x"), ok("a")}, candidates: []string{"x", "a"},
			n: 2, maxUnavailable: 0,
			want: []string{},
		},
		{
			name: "minReadySeconds: a pod ready for 5s of 10 is unavailable",
			all:  []*corev1.Pod{young("y"), ok("a"), ok("b")}, candidates: []string{"y", "a", "b"},
			n: 3, maxUnavailable: 2, minReady: 10,
			want: []string{"y", "a"},
		},
		{
			name: "n 0",
			all:  []*corev1.Pod{ok("a")}, candidates: []string{"a"},
			n: 0, maxUnavailable: 1,
			want: []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(int32(len(tc.all)))
			cs.Spec.MinReadySeconds = tc.minReady
			st := testState(cs, tc.all...)
			byName := map[string]*corev1.Pod{}
			for _, p := range tc.all {
				byName[p.Name] = p
			}
			var cands []*corev1.Pod
			for _, n := range tc.candidates {
				cands = append(cands, byName[n])
			}
			assert.Equal(t, tc.want, podNames(limitUpdates(st, cands, tc.n, tc.maxUnavailable, st.Update)))
		})
	}
}

func TestSortForUpdate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   func(*appsv1alpha1.CloneSet)
		pods []*corev1.Pod
		want []string
	}{
		{
			name: "active-pod order: unscheduled, pending, not ready, then ready",
			pods: []*corev1.Pod{
				testPod("ready"), testPod("notready", notReady()), testPod("pending", pending()), testPod("unscheduled", unscheduled()),
			},
			want: []string{"unscheduled", "pending", "notready", "ready"},
		},
		{
			name: "PreparingUpdate first, before even an unscheduled pod",
			pods: []*corev1.Pod{
				testPod("unscheduled", unscheduled()), testPod("ready"),
				testPod("waiting", inState(pub.LifecycleStatePreparingUpdate)),
			},
			want: []string{"waiting", "unscheduled", "ready"},
		},
		{
			name: "weight priority before the active-pod order",
			cs: func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
					{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
					{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
				}}
			},
			pods: []*corev1.Pod{
				testPod("plain", notReady()),
				testPod("zone-a", withLabel("zone", "a")),
				testPod("canary", withLabel("tier", "canary")),
				testPod("both", withLabel("tier", "canary"), withLabel("zone", "a")),
			},
			want: []string{"both", "canary", "zone-a", "plain"},
		},
		{
			name: "order priority: higher value first, pods without the key last",
			cs: func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}}
			},
			pods: []*corev1.Pod{
				testPod("none", unscheduled()),
				testPod("r1", withLabel("rank", "v1")),
				testPod("r10", withLabel("rank", "v10")),
				testPod("r3", withLabel("rank", "3")),
			},
			want: []string{"r10", "r3", "r1", "none"},
		},
		{
			name: "PreparingUpdate still beats priority",
			cs: func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}}
			},
			pods: []*corev1.Pod{
				testPod("r9", withLabel("rank", "9")),
				testPod("waiting", inState(pub.LifecycleStatePreparingUpdate), withLabel("rank", "1")),
			},
			want: []string{"waiting", "r9"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(int32(len(tc.pods)))
			if tc.cs != nil {
				tc.cs(cs)
			}
			st := testState(cs, tc.pods...)
			in := append([]*corev1.Pod(nil), tc.pods...)
			assert.Equal(t, tc.want, podNames(sortForUpdate(st, in)))
			assert.Equal(t, podNames(tc.pods), podNames(in), "input slice reordered")
		})
	}
}

func TestUpdateCandidates(t *testing.T) {
	grace := withAnnotation(pub.InPlaceUpdateGraceKey, `{"revision":"`+updateRev+`","containerImages":{"main":"nginx:1.28"},"graceSeconds":30}`)
	pods := []*corev1.Pod{
		testPod("new"),                                        // at the update revision
		testPod("new-short", atRev("6c8d9f7b5")),              // at the update revision (short hash)
		testPod("old", atRev(currentRev)),                     // candidate
		testPod("old-short", atRev("5f7b8c9d4")),              // candidate (short hash of the current revision)
		testPod("old-unready", atRev(currentRev), notReady()), // candidate: readiness is limitUpdates' business
		testPod("old-leaving", atRev(currentRev), inState(pub.LifecycleStatePreparingDelete)),
		testPod("old-marked", atRev(currentRev), withLabel(pub.SpecifiedDeleteKey, "true")),
		testPod("old-named", atRev(currentRev)), // in podsToDelete
		testPod("old-grace", atRev(currentRev), grace),
		testPod("old-grace-updated", atRev(currentRev), grace, inState(pub.LifecycleStateUpdated)), // candidate: Updated ignores the grace
		testPod("old-waiting", atRev(currentRev), inState(pub.LifecycleStatePreparingUpdate)),      // candidate
		testPod("new-leaving", inState(pub.LifecycleStatePreparingDelete)),
		testPod("new-marked", withLabel(pub.SpecifiedDeleteKey, "")),
	}
	cs := testCloneSet(int32(len(pods)))
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"old-named"}
	st := testState(cs, pods...)

	t.Run("forward: pods not at the update revision", func(t *testing.T) {
		// Specified-delete pods are not skipped (as OpenKruise).
		assert.Equal(t, []string{"old", "old-short", "old-unready", "old-marked", "old-named", "old-grace-updated", "old-waiting"},
			podNames(st.updateCandidates(true)))
	})
	t.Run("rollback: pods at the update revision go back to the current one", func(t *testing.T) {
		got := podNames(st.updateCandidates(false))
		assert.Equal(t, []string{"new", "new-short", "new-marked"}, got)
	})
}
