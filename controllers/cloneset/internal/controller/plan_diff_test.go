package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestPartitionReplicas(t *testing.T) {
	for _, tc := range []struct {
		partition string // "" = nil
		replicas  int
		want      int
	}{
		{"", 5, 0},
		{"0", 5, 0},
		{"3", 5, 3},
		{"5", 5, 5},    // a number may keep every pod
		{"8", 5, 5},    // clamped to replicas
		{"2", 0, 0},    // clamped to replicas
		{"10%", 15, 2}, // 1.5 rounds up
		{"50%", 5, 3},  // 2.5 rounds up
		{"1%", 10, 1},  // 0.1 rounds up
		{"0%", 10, 0},
		{"99%", 4, 3},  // 3.96 -> 4 = replicas: v1.2 rule keeps replicas-1, one pod is updated
		{"90%", 10, 9}, // exactly 9, not touched by the rule
		{"95%", 10, 9}, // 9.5 -> 10 = replicas -> 9
		{"100%", 4, 4}, // 100% keeps everything
		{"100%", 1, 1},
		{"99%", 1, 1}, // the rule needs more than one replica
		{"50%", 0, 0},
	} {
		var p *intstr.IntOrString
		if tc.partition != "" {
			p = ios(tc.partition)
		}
		assert.Equal(t, tc.want, PartitionReplicas(p, tc.replicas), "partition %q of %d", tc.partition, tc.replicas)
	}
}

func TestResolveLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func(*appsv1alpha1.CloneSetSpec)
		want limits
	}{
		{
			name: "defaults: replicas 1, maxUnavailable 20% of 1 rounds up to 1, scale unlimited",
			spec: func(s *appsv1alpha1.CloneSetSpec) { s.Replicas = nil },
			want: limits{replicas: 1, maxUnavailable: 1, scaleMaxUnavailable: -1},
		},
		{
			name: "default maxUnavailable 20% of 10 = 2",
			want: limits{replicas: 10, maxUnavailable: 2, scaleMaxUnavailable: -1},
		},
		{
			name: "no surge: maxUnavailable 20% of 3 = 0.6 rounds up to 1",
			spec: func(s *appsv1alpha1.CloneSetSpec) { s.Replicas = new(int32(3)) },
			want: limits{replicas: 3, maxUnavailable: 1, scaleMaxUnavailable: -1},
		},
		{
			name: "with surge: maxUnavailable 20% of 3 rounds down to 0, maxSurge 10% of 3 rounds up to 1",
			spec: func(s *appsv1alpha1.CloneSetSpec) {
				s.Replicas = new(int32(3))
				s.UpdateStrategy.MaxSurge = ios("10%")
			},
			want: limits{replicas: 3, maxSurge: 1, maxUnavailable: 0, scaleMaxUnavailable: -1},
		},
		{
			name: "paused: no surge, so maxUnavailable rounds up again",
			spec: func(s *appsv1alpha1.CloneSetSpec) {
				s.Replicas = new(int32(3))
				s.UpdateStrategy.MaxSurge = ios("10%")
				s.UpdateStrategy.Paused = true
			},
			want: limits{replicas: 3, maxSurge: 0, maxUnavailable: 1, scaleMaxUnavailable: -1},
		},
		{
			name: "numbers are taken as they are; partition percent rounds up",
			spec: func(s *appsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxSurge = ios("2")
				s.UpdateStrategy.MaxUnavailable = ios("3")
				s.UpdateStrategy.Partition = ios("25%") // 2.5 -> 3
			},
			want: limits{replicas: 10, partition: 3, maxSurge: 2, maxUnavailable: 3, scaleMaxUnavailable: -1},
		},
		{
			name: "maxUnavailable 25% of 10: 2.5 up without surge",
			spec: func(s *appsv1alpha1.CloneSetSpec) { s.UpdateStrategy.MaxUnavailable = ios("25%") },
			want: limits{replicas: 10, maxUnavailable: 3, scaleMaxUnavailable: -1},
		},
		{
			name: "maxUnavailable 25% of 10: 2.5 down with surge; maxSurge 15% of 10 = 1.5 up",
			spec: func(s *appsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxUnavailable = ios("25%")
				s.UpdateStrategy.MaxSurge = ios("15%")
			},
			want: limits{replicas: 10, maxSurge: 2, maxUnavailable: 2, scaleMaxUnavailable: -1},
		},
		{
			name: "maxSurge 0 counts as no surge",
			spec: func(s *appsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxUnavailable = ios("25%")
				s.UpdateStrategy.MaxSurge = ios("0")
			},
			want: limits{replicas: 10, maxUnavailable: 3, scaleMaxUnavailable: -1},
		},
		{
			name: "scaleStrategy.maxUnavailable percent rounds up: 15% of 10 = 2",
			spec: func(s *appsv1alpha1.CloneSetSpec) { s.ScaleStrategy.MaxUnavailable = ios("15%") },
			want: limits{replicas: 10, maxUnavailable: 2, scaleMaxUnavailable: 2},
		},
		{
			name: "scaleStrategy.maxUnavailable 0 is a limit, not unlimited",
			spec: func(s *appsv1alpha1.CloneSetSpec) { s.ScaleStrategy.MaxUnavailable = ios("0") },
			want: limits{replicas: 10, maxUnavailable: 2, scaleMaxUnavailable: 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(10)
			if tc.spec != nil {
				tc.spec(&cs.Spec)
			}
			assert.Equal(t, tc.want, resolveLimits(&cs.Spec))
		})
	}
}

// Pod facts used by the diff cases.
var (
	oldOK     = podFacts{available: true}
	oldBad    = podFacts{}
	oldDel    = podFacts{specifiedDelete: true, available: true}
	oldPreDel = podFacts{preparingDelete: true}
	newOK     = podFacts{updated: true, available: true}
	newBad    = podFacts{updated: true}
	newDel    = podFacts{updated: true, specifiedDelete: true, available: true}
	newPreDel = podFacts{updated: true, preparingDelete: true}
)

// facts repeats f n times for each (f, n) pair.
func facts(groups ...any) []podFacts {
	var out []podFacts
	for i := 0; i < len(groups); i += 2 {
		for range groups[i+1].(int) {
			out = append(out, groups[i].(podFacts))
		}
	}
	return out
}

func TestCountPods(t *testing.T) {
	got := countPods(facts(
		oldOK, 3, oldBad, 1, oldDel, 1, oldPreDel, 2,
		newOK, 4, newBad, 2, newDel, 1, newPreDel, 1,
		// specified-delete and unavailable: counted as to-delete only.
		podFacts{specifiedDelete: true}, 1,
		// PreparingDelete and specified-delete: counted as PreparingDelete only.
		podFacts{updated: true, preparingDelete: true, specifiedDelete: true}, 1,
	))
	assert.Equal(t, podCounts{
		total: 17, newTotal: 9, oldTotal: 8,
		oldActive: 6, newActive: 7, // everything but PreparingDelete
		oldPreDelete: 2, newPreDelete: 2,
		oldToDelete: 2, newToDelete: 1,
		oldUnavailable: 1, newUnavailable: 2,
	}, got)
	assert.Equal(t, 4, got.preDelete())
	assert.Equal(t, 3, got.toDelete())
	assert.Equal(t, 3, got.unavailable())
	assert.Equal(t, podCounts{}, countPods(nil))
}

// TestCalculateDiffs works every expected number out by hand from the
// formulas of behaviour §1.1 "The diff algorithm" (docs/openkruise-behaviour.md):
//
//	updateOldDiff = oldActive - partition, updateNewDiff = newActive - (replicas - partition)
//	  (clamped to >= 0 and <= 0 unless rollback and the revisions differ)
//	scale = replicas + useSurge - total (total without PreparingDelete when excluded)
//	scaleUpOld = max(partition + useSurgeOld - oldTotal, 0)
//	scaleUpLimit = min(scale, max(scaleMaxUnavailable - totalUnavailable, 0))
//	scaleDownOld = max(oldTotal - partition - useSurgeOld, 0)
//	deleteReadyLimit = max(maxUnavailable + (total - replicas) - totalUnavailable, 0)
//	updateNum = |oldDiff| <= |newDiff| ? oldDiff : -newDiff
//	updateMaxUnavailable = maxUnavailable + total - replicas
//
// where totalUnavailable = unavailable + PreparingDelete.
func TestCalculateDiffs(t *testing.T) {
	for _, tc := range []struct {
		name                string
		replicas            int32
		partition           string
		maxSurge            string
		maxUnavailable      string
		scaleMaxUnavailable string
		paused              bool
		pods                []podFacts
		sameRevision        bool
		rollback            bool
		exclude             bool
		want                diffs
	}{
		{
			// maxUnavailable 20% of 5 = 1. newDiff = 3-5 = -2, oldDiff 0 -> updateNum 0.
			// scale = 5 - 3 = 2, no partition -> all at the update revision, unlimited.
			name:     "plain scale up",
			replicas: 5, sameRevision: true,
			pods: facts(newOK, 3),
			want: diffs{scaleUp: 2, scaleUpLimit: 2},
		},
		{
			// maxUnavailable 20% of 2 = 0.4 -> 1. scale = 2 - 4 = -2.
			// deleteReadyLimit = 1 + (4-2) - 0 = 3. newDiff = 4-2 = 2 clamped to 0.
			name:     "plain scale down",
			replicas: 2, sameRevision: true,
			pods: facts(newOK, 4),
			want: diffs{scaleDown: 2, deleteReadyLimit: 3},
		},
		{
			// maxUnavailable 20% of 3 -> 1. scale = 3 - 5 = -2; scaleDownOld = 2 - 0 - 0 = 2.
			// deleteReadyLimit = 1 + 2 - 0 = 3. oldDiff = 2, newDiff = 3-3 = 0: |2| > |0|
			// -> updateNum = -0 = 0: the old pods go by scale-down, not update.
			name:     "scale down removes old-revision pods first",
			replicas: 3,
			pods:     facts(oldOK, 2, newOK, 3),
			want:     diffs{scaleDown: 2, scaleDownOld: 2, deleteReadyLimit: 3},
		},
		{
			// scaleMaxUnavailable 2; totalUnavailable 1. scale = 6 - 3 = 3;
			// scaleUpLimit = min(3, max(2-1, 0)) = 1.
			name:     "scaleStrategy.maxUnavailable limits creations while a pod is unavailable",
			replicas: 6, scaleMaxUnavailable: "2", sameRevision: true,
			pods: facts(newOK, 2, newBad, 1),
			want: diffs{scaleUp: 3, scaleUpLimit: 1},
		},
		{
			// scaleMaxUnavailable 50% of 4 = 2; totalUnavailable = 1 unavailable + 1
			// PreparingDelete = 2. scale = 4 - 3 = 1; limit = max(2-2, 0) = 0.
			// newActive 2 -> newDiff -2, oldDiff 0 -> updateNum 0.
			name:     "scaleStrategy.maxUnavailable exhausted: no creation",
			replicas: 4, scaleMaxUnavailable: "50%", sameRevision: true,
			pods: facts(newOK, 1, newBad, 1, newPreDel, 1),
			want: diffs{scaleUp: 1, scaleUpLimit: 0},
		},
		{
			// partition 3 of 5. oldDiff = 1-3 = -2 -> 0; newDiff = 1-2 = -1.
			// scale = 5 - 2 = 3; scaleUpOld = 3 + 0 - 1 = 2 pods at the current
			// revision; updateNum = 0 (|0| <= |-1|).
			name:     "partition: scale up creates current-revision pods to fill it",
			replicas: 5, partition: "3",
			pods: facts(oldOK, 1, newOK, 1),
			want: diffs{scaleUp: 3, scaleUpOld: 2, scaleUpLimit: 3},
		},
		{
			// partition 50% of 10 = 5; maxUnavailable 20% -> 2. oldDiff = 4-5 -> 0;
			// newDiff = 4-5 = -1. scale = 2, scaleUpOld = 5 - 4 = 1.
			name:     "percent partition while scaling up mid-rollout",
			replicas: 10, partition: "50%",
			pods: facts(oldOK, 4, newOK, 4),
			want: diffs{scaleUp: 2, scaleUpOld: 1, scaleUpLimit: 2},
		},
		{
			// partition 1: oldDiff = 4-1 = 3, newDiff = 0-3 = -3 -> updateNum 3.
			// maxUnavailable 50% of 4 = 2; updateMaxUnavailable = 2 + 4 - 4 = 2.
			name:     "partition keeps old pods: update the rest",
			replicas: 4, partition: "1", maxUnavailable: "50%",
			pods: facts(oldOK, 4),
			want: diffs{updateNum: 3, updateMaxUnavailable: 2},
		},
		{
			// partition 99% of 4 -> 3 (v1.2 rule). oldDiff = 1, newDiff = -1 -> 1.
			// maxUnavailable 20% of 4 = 0.8 -> 1; updateMaxUnavailable = 1.
			name:     "partition 99% of 4 still updates one pod",
			replicas: 4, partition: "99%",
			pods: facts(oldOK, 4),
			want: diffs{updateNum: 1, updateMaxUnavailable: 1},
		},
		{
			// maxSurge 1, maxUnavailable 0. oldDiff 4, newDiff -4: updateSurge = 4,
			// old surge 0 (oldDiff > 0). useSurge = min(1, 4) = 1. scale = 4+1-4 = 1
			// at the update revision (scaleUpOld = max(0+0-4, 0) = 0).
			// updateNum 4, updateMaxUnavailable = 0 + 4 - 4 = 0.
			name:     "maxSurge for update: surge pod created at the update revision",
			replicas: 4, maxSurge: "1", maxUnavailable: "0",
			pods: facts(oldOK, 4),
			want: diffs{useSurge: 1, scaleUp: 1, scaleUpLimit: 1, updateNum: 4},
		},
		{
			// The surge pod exists: oldDiff 4, newDiff 1-4 = -3; updateSurge = 3,
			// useSurge 1; scale = 4+1-5 = 0. updateNum = -(-3) = 3;
			// updateMaxUnavailable = 0 + 5 - 4 = 1: one old pod may go down now.
			name:     "maxSurge for update: surge pod in place, one old pod may be updated",
			replicas: 4, maxSurge: "1", maxUnavailable: "0",
			pods: facts(oldOK, 4, newOK, 1),
			want: diffs{useSurge: 1, updateNum: 3, updateMaxUnavailable: 1},
		},
		{
			// maxSurge 1, maxUnavailable 0, a new-revision pod marked for deletion:
			// scaleSurge = min(max(0+1+0-0, 0), 1) = 1, none of it old (newToDelete 1).
			// No update diff. scale = 3+1-3 = 1: the replacement comes first.
			// deleteReadyLimit = max(0 + 0 - 0, 0) = 0: the marked pod stays for now.
			name:     "maxSurge replaces a specified-delete pod before deleting it",
			replicas: 3, maxSurge: "1", maxUnavailable: "0", sameRevision: true,
			pods: facts(newOK, 2, newDel, 1),
			want: diffs{useSurge: 1, scaleUp: 1, scaleUpLimit: 1},
		},
		{
			// Same with an old-revision pod under partition 3: scaleSurge 1 > newToDelete 0
			// -> scaleOldSurge 1, useSurgeOld 1. scale = 1; scaleUpOld = 3+1-3 = 1:
			// the replacement keeps the current revision.
			name:     "maxSurge replaces an old specified-delete pod at the current revision",
			replicas: 3, partition: "3", maxSurge: "1", maxUnavailable: "0",
			pods: facts(oldOK, 2, oldDel, 1),
			want: diffs{useSurge: 1, useSurgeOld: 1, scaleUp: 1, scaleUpOld: 1, scaleUpLimit: 1},
		},
		{
			// The replacement runs: 4 old pods, one marked. oldDiff = 4-3 = 1, newDiff 0
			// (no update surge). scale = 3+1-4 = 0. deleteReadyLimit = 0 + (4-3) - 0 = 1:
			// now the marked pod may be deleted. updateNum: |1| > |0| -> 0.
			name:     "maxSurge replacement ready: the specified-delete pod may go",
			replicas: 3, partition: "3", maxSurge: "1", maxUnavailable: "0",
			pods: facts(oldOK, 3, oldDel, 1),
			want: diffs{useSurge: 1, useSurgeOld: 1, deleteReadyLimit: 1},
		},
		{
			// maxUnavailable 20% of 5 = 1. scale = 5 - 6 = -1. totalUnavailable =
			// 1 unavailable + 1 PreparingDelete = 2; deleteReadyLimit = 1 + 1 - 2 = 0:
			// no available pod may be removed. newActive 5 -> newDiff 0.
			name:     "deleteReadyLimit exhausted by unavailable and PreparingDelete pods",
			replicas: 5, sameRevision: true,
			pods: facts(newOK, 4, newBad, 1, newPreDel, 1),
			want: diffs{scaleDown: 1, deleteReadyLimit: 0},
		},
		{
			// maxUnavailable 40% of 5 = 2. deleteReadyLimit = 2 + (6-5) - 1 = 2.
			name:     "deleteReadyLimit with room",
			replicas: 5, maxUnavailable: "40%", sameRevision: true,
			pods: facts(newOK, 5, newBad, 1),
			want: diffs{scaleDown: 1, deleteReadyLimit: 2},
		},
		{
			// Partition raised from 1 to 3 with rollback: oldDiff = 1-3 = -2, newDiff =
			// 3-1 = 2, not clamped. updateNum = -2 (back to current revision).
			// maxUnavailable 20% of 4 -> 1; updateMaxUnavailable = 1.
			name:     "rollback: updateNum negative",
			replicas: 4, partition: "3", rollback: true,
			pods: facts(oldOK, 1, newOK, 3),
			want: diffs{updateNum: -2, updateMaxUnavailable: 1},
		},
		{
			// Without the gate the diffs are clamped to 0: nothing moves back.
			name:     "no rollback without CloneSetPartitionRollback",
			replicas: 4, partition: "3",
			pods: facts(oldOK, 1, newOK, 3),
			want: diffs{},
		},
		{
			// Current = update revision: oldDiff = 0-3 = -3, newDiff = 4-1 = 3 are
			// clamped even with the gate; there is nothing to roll back to.
			name:     "no rollback when the revisions are the same",
			replicas: 4, partition: "3", rollback: true, sameRevision: true,
			pods: facts(newOK, 4),
			want: diffs{},
		},
		{
			// Rollback with maxSurge 1, maxUnavailable 0: oldDiff -2, newDiff 2 ->
			// updateSurge 2, old surge 2 (oldDiff < 0); useSurge 1, useSurgeOld 1.
			// scale = 4+1-4 = 1, scaleUpOld = min(3+1-1, 1) = 1: the surge pod is
			// created at the current revision. updateMaxUnavailable = 0.
			name:     "rollback uses surge at the current revision",
			replicas: 4, partition: "3", maxSurge: "1", maxUnavailable: "0", rollback: true,
			pods: facts(oldOK, 1, newOK, 3),
			want: diffs{useSurge: 1, useSurgeOld: 1, scaleUp: 1, scaleUpOld: 1, scaleUpLimit: 1, updateNum: -2},
		},
		{
			// A scaled-in pod waits in PreparingDelete; 3 pods count for 3 replicas.
			// newActive 2 -> newDiff -1, updateNum 0.
			name:     "PreparingDelete counts towards replicas by default",
			replicas: 3, sameRevision: true,
			pods: facts(newOK, 2, newPreDel, 1),
			want: diffs{},
		},
		{
			// excludePreparingDelete: total = 3 - 1 = 2, scale = 1: a replacement is
			// created while the hook runs. totalUnavailable 1 but no scale limit.
			name:     "excludePreparingDelete: PreparingDelete pods do not count",
			replicas: 3, sameRevision: true, exclude: true,
			pods: facts(newOK, 2, newPreDel, 1),
			want: diffs{scaleUp: 1, scaleUpLimit: 1},
		},
		{
			// partition 2; old pods: 1 active + 1 PreparingDelete; excluded, the
			// current-revision total is 1 (OpenKruise: currentTotalOldCount -=
			// preDeletingOldRevisionCount). scale = 3 - 2 = 1; scaleUpOld =
			// 2 - 1 = 1: the replacement must keep the current revision, or the
			// partition is broken once the PreparingDelete pod is gone.
			name:     "excludePreparingDelete: replacement of an old pod keeps the current revision",
			replicas: 3, partition: "2", exclude: true,
			pods: facts(oldOK, 1, oldPreDel, 1, newOK, 1),
			want: diffs{scaleUp: 1, scaleUpOld: 1, scaleUpLimit: 1},
		},
		{
			// Paused: maxSurge 1 is ignored, so maxUnavailable 20% of 4 rounds up to 1
			// and no surge pod is created. updateNum 4 (update() returns early when
			// paused), updateMaxUnavailable = 1.
			name:     "paused: no surge",
			replicas: 4, maxSurge: "1", paused: true,
			pods: facts(oldOK, 4),
			want: diffs{updateNum: 4, updateMaxUnavailable: 1},
		},
		{
			// Not paused, same spec: maxUnavailable 20% of 4 rounds down to 0 with
			// surge; surge pod at the update revision.
			name:     "not paused: same spec surges",
			replicas: 4, maxSurge: "1",
			pods: facts(oldOK, 4),
			want: diffs{useSurge: 1, scaleUp: 1, scaleUpLimit: 1, updateNum: 4},
		},
		{
			// Unavailable old pods count against maxUnavailable during update only in
			// limitUpdates; the diff still says how many: oldDiff 5, newDiff -5 -> 5.
			// maxUnavailable 40% of 5 = 2; updateMaxUnavailable = 2.
			name:     "update with unavailable pods",
			replicas: 5, maxUnavailable: "40%",
			pods: facts(oldOK, 3, oldBad, 2),
			want: diffs{updateNum: 5, updateMaxUnavailable: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(tc.replicas, func(cs *appsv1alpha1.CloneSet) {
				us := &cs.Spec.UpdateStrategy
				if tc.partition != "" {
					us.Partition = ios(tc.partition)
				}
				if tc.maxSurge != "" {
					us.MaxSurge = ios(tc.maxSurge)
				}
				if tc.maxUnavailable != "" {
					us.MaxUnavailable = ios(tc.maxUnavailable)
				}
				if tc.scaleMaxUnavailable != "" {
					cs.Spec.ScaleStrategy.MaxUnavailable = ios(tc.scaleMaxUnavailable)
				}
				us.Paused = tc.paused
			})
			got := calculateDiffs(diffInput{
				limits:                 resolveLimits(&cs.Spec),
				counts:                 countPods(tc.pods),
				sameRevision:           tc.sameRevision,
				rollback:               tc.rollback,
				excludePreparingDelete: tc.exclude,
			})
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDiffInput checks that the sync state feeds calculateDiffs what the
// pods show: revision (full or short hash), PreparingDelete, specified delete
// by label or podsToDelete, availability with minReadySeconds and lifecycle,
// and the exclude-PreparingDelete label.
func TestDiffInput(t *testing.T) {
	cs := testCloneSet(6, func(cs *appsv1alpha1.CloneSet) {
		cs.Labels = map[string]string{pub.CloneSetScalingExcludePreparingDeleteKey: "true"}
		cs.Spec.MinReadySeconds = 30
		cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-named"}
	})
	st := testState(cs,
		testPod("web-new"),
		testPod("web-short", atRev("6c8d9f7b5")),       // short hash of updateRev
		testPod("web-young", readyFor(10*time.Second)), // not available yet
		testPod("web-old", atRev(currentRev)),          // old, available
		testPod("web-named", atRev(currentRev)),        // podsToDelete
		testPod("web-marked", withLabel(pub.SpecifiedDeleteKey, "")),
		testPod("web-leaving", inState(pub.LifecycleStatePreparingDelete)),
		testPod("web-updating", inState(pub.LifecycleStateUpdating)), // not available
		testPod("web-inplace", inPlaceNotReady()),                    // Ready, InPlaceUpdateReady False: not available
		testPod("web-pending-ready", readyFor(time.Hour), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), // not Running: not available
	)
	in := st.diffInput()
	assert.True(t, in.excludePreparingDelete)
	assert.False(t, in.sameRevision)
	assert.Equal(t, 6, in.limits.replicas)
	assert.Equal(t, podCounts{
		total: 10, newTotal: 8, oldTotal: 2,
		newActive: 7, oldActive: 2,
		newPreDelete:   1,
		newToDelete:    1,
		oldToDelete:    1,
		newUnavailable: 4, // young, updating, inplace, pending-ready
	}, in.counts)
}
