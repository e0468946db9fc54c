package controller

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func statusIn(cs *appsv1alpha1.CloneSet, pods ...*corev1.Pod) statusInput {
	return statusInput{cs: cs, pods: pods, updateRevision: updateRev, currentRevision: currentRev, collisionCount: 2, now: now}
}

func cond(s appsv1alpha1.CloneSetStatus, t appsv1alpha1.CloneSetConditionType) *appsv1alpha1.CloneSetCondition {
	return findCondition(s.Conditions, t)
}

func TestCalculateStatusCounts(t *testing.T) {
	cs := testCloneSet(7, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.MinReadySeconds = 30
		cs.Spec.UpdateStrategy.Partition = ios("2")
		cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}}
	})
	pods := []*corev1.Pod{
		testPod("web-a", atRev("6c8d9f7b5")),                                     // updated (short hash), ready, available
		testPod("web-b", readyFor(10*time.Second)),                               // updated, ready, not available (minReadySeconds)
		testPod("web-c", atRev(currentRev)),                                      // old, ready, available
		testPod("web-d", inPlaceNotReady()),                                      // updated, InPlaceUpdateReady=False: not ready
		testPod("web-e", inState(pub.LifecycleStatePreparingUpdate)),             // updated, ready, not available (lifecycle)
		testPod("web-f", atRev(currentRev), pending()),                           // old, not ready
		testPod("web-g", inState(pub.LifecycleStateNormal), withLabel("x", "y")), // updated, ready, available
	}
	s := calculateStatus(statusIn(cs, pods...))

	assert.Equal(t, int64(3), s.ObservedGeneration)
	assert.Equal(t, int32(7), s.Replicas)
	assert.Equal(t, int32(5), s.ReadyReplicas, "a b c e g")
	assert.Equal(t, int32(3), s.AvailableReplicas, "a c g")
	assert.Equal(t, int32(5), s.UpdatedReplicas, "a b d e g")
	assert.Equal(t, int32(4), s.UpdatedReadyReplicas, "a b e g")
	assert.Equal(t, int32(2), s.UpdatedAvailableReplicas, "a g")
	assert.Equal(t, int32(5), s.ExpectedUpdatedReplicas, "7 - partition 2")
	assert.Equal(t, updateRev, s.UpdateRevision)
	assert.Equal(t, currentRev, s.CurrentRevision, "not every pod is updated")
	require.NotNil(t, s.CollisionCount)
	assert.Equal(t, int32(2), *s.CollisionCount)
	assert.Equal(t, "app=web,tier in (front)", s.LabelSelector)
}

func TestCalculateStatusExpectedUpdatedReplicas(t *testing.T) {
	for _, tc := range []struct {
		partition string
		replicas  int32
		want      int32
	}{
		{"", 5, 5},
		{"2", 5, 3},
		{"9", 5, 0},
		{"50%", 5, 2},  // partition 3 (rounded up)
		{"99%", 4, 1},  // partition 3 (v1.2 rule)
		{"100%", 4, 0}, // partition 4
	} {
		cs := testCloneSet(tc.replicas)
		if tc.partition != "" {
			cs.Spec.UpdateStrategy.Partition = ios(tc.partition)
		}
		assert.Equal(t, tc.want, calculateStatus(statusIn(cs)).ExpectedUpdatedReplicas, "partition %q of %d", tc.partition, tc.replicas)
	}
}

func TestCalculateStatusCurrentRevision(t *testing.T) {
	updated := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, testPod("web-"+string(rune('a'+i)), notReady())) // readiness does not matter
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		replicas int32
		pods     []*corev1.Pod
		want     string
	}{
		{"all pods updated, as many as replicas: advances without waiting for readiness", 3, updated(3), updateRev},
		{"all pods updated but fewer than replicas", 4, updated(3), currentRev},
		{"all pods updated but more than replicas (surge)", 2, updated(3), currentRev},
		{"one old pod left", 3, append(updated(2), testPod("web-old", atRev(currentRev))), currentRev},
		{"no pods, no replicas", 0, nil, updateRev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, calculateStatus(statusIn(testCloneSet(tc.replicas), tc.pods...)).CurrentRevision)
		})
	}
}

func TestCalculateStatusLabelSelector(t *testing.T) {
	cs := testCloneSet(1)
	cs.Spec.Selector = nil
	assert.Equal(t, "", calculateStatus(statusIn(cs)).LabelSelector, "nil selector")
	cs.Spec.Selector = &metav1.LabelSelector{}
	assert.Equal(t, "", calculateStatus(statusIn(cs)).LabelSelector, "empty selector")
	cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "env": "prod"}}
	assert.Equal(t, "app=web,env=prod", calculateStatus(statusIn(cs)).LabelSelector)
}

// allReady is n available pods at the update revision.
func allReady(n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, testPod("web-"+string(rune('a'+i))))
	}
	return out
}

func TestFailureConditions(t *testing.T) {
	errScale := errors.New("pods \"web-x\" is forbidden: exceeded quota")
	errUpdate := errors.New("conflict")
	earlier := metav1.NewTime(now.Add(-time.Hour))
	// failure: a condition of type typ, last changed (transition and
	// update) at at.
	failure := func(typ appsv1alpha1.CloneSetConditionType, status corev1.ConditionStatus, reason, message string, at metav1.Time) *appsv1alpha1.CloneSetCondition {
		return &appsv1alpha1.CloneSetCondition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: at, LastUpdateTime: at}
	}

	for _, tc := range []struct {
		name   string
		old    []appsv1alpha1.CloneSetCondition
		mutate func(*statusInput)
		typ    appsv1alpha1.CloneSetConditionType
		want   *appsv1alpha1.CloneSetCondition // nil: no condition of typ
	}{
		{
			name: "no failure, no condition",
			typ:  appsv1alpha1.CloneSetConditionFailedScale,
		},
		{
			name:   "scale error sets FailedScale True",
			mutate: func(in *statusInput) { in.scaleErr = errScale },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", errScale.Error(), metav1.NewTime(now)),
		},
		{
			name: "scale success turns FailedScale back to False",
			old:  []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", "x", earlier)},
			typ:  appsv1alpha1.CloneSetConditionFailedScale,
			want: failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionFalse, ReasonScaled, "", metav1.NewTime(now)),
		},
		{
			name:   "same error again keeps the timestamps",
			old:    []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", errScale.Error(), earlier)},
			mutate: func(in *statusInput) { in.scaleErr = errScale },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", errScale.Error(), earlier),
		},
		{
			name:   "False stays False untouched",
			old:    []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionFalse, ReasonScaled, "", earlier)},
			mutate: func(in *statusInput) { in.scaled = true },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionFalse, ReasonScaled, "", earlier),
		},
		{
			name:   "podsToDelete naming no pod sets FailedScale PodsToDeleteNotFound",
			mutate: func(in *statusInput) { in.missingPodsToDelete = []string{"web-zzzzz"} },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, ReasonPodsToDeleteNotFound, `spec.scaleStrategy.podsToDelete: no pod of this CloneSet is named ["web-zzzzz"]; the names were removed`, metav1.NewTime(now)),
		},
		{
			name: "PodsToDeleteNotFound is kept by a sync that did not scale",
			old:  []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, ReasonPodsToDeleteNotFound, "m", earlier)},
			typ:  appsv1alpha1.CloneSetConditionFailedScale,
			want: failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, ReasonPodsToDeleteNotFound, "m", earlier),
		},
		{
			name:   "PodsToDeleteNotFound is cleared by a sync that scaled",
			old:    []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, ReasonPodsToDeleteNotFound, "m", earlier)},
			mutate: func(in *statusInput) { in.scaled = true },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionFalse, ReasonScaled, "", metav1.NewTime(now)),
		},
		{
			name:   "a scale error wins over missing podsToDelete",
			mutate: func(in *statusInput) { in.scaleErr, in.missingPodsToDelete = errScale, []string{"web-zzzzz"} },
			typ:    appsv1alpha1.CloneSetConditionFailedScale,
			want:   failure(appsv1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", errScale.Error(), metav1.NewTime(now)),
		},
		{
			name:   "update error sets FailedUpdate True",
			mutate: func(in *statusInput) { in.updateErr = errUpdate },
			typ:    appsv1alpha1.CloneSetConditionFailedUpdate,
			want:   failure(appsv1alpha1.CloneSetConditionFailedUpdate, corev1.ConditionTrue, "UpdateFailed", "conflict", metav1.NewTime(now)),
		},
		{
			name: "update success turns FailedUpdate back to False",
			old:  []appsv1alpha1.CloneSetCondition{*failure(appsv1alpha1.CloneSetConditionFailedUpdate, corev1.ConditionTrue, "UpdateFailed", "conflict", earlier)},
			typ:  appsv1alpha1.CloneSetConditionFailedUpdate,
			want: failure(appsv1alpha1.CloneSetConditionFailedUpdate, corev1.ConditionFalse, ReasonUpdated, "", metav1.NewTime(now)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(2)
			cs.Status.Conditions = tc.old
			before := cs.DeepCopy()
			in := statusIn(cs, allReady(2)...)
			if tc.mutate != nil {
				tc.mutate(&in)
			}
			s := calculateStatus(in)
			assert.Equal(t, tc.want, cond(s, tc.typ))
			assert.Equal(t, before, cs, "calculateStatus modified the CloneSet")
		})
	}
}

func TestProgressingCondition(t *testing.T) {
	earlier := metav1.NewTime(now.Add(-time.Hour))
	progressing := func(reason string, status corev1.ConditionStatus, updated metav1.Time) []appsv1alpha1.CloneSetCondition {
		return []appsv1alpha1.CloneSetCondition{{Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: status,
			Reason: reason, Message: "m", LastTransitionTime: earlier, LastUpdateTime: updated}}
	}
	// midRollout: 4 replicas, 2 updated and available, 2 old and available.
	midRollout := func() []*corev1.Pod {
		return []*corev1.Pod{testPod("web-a"), testPod("web-b"), testPod("web-c", atRev(currentRev)), testPod("web-d", atRev(currentRev))}
	}
	// midStatus is the status midRollout computes to (no progress since).
	midStatus := appsv1alpha1.CloneSetStatus{Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 2, UpdatedAvailableReplicas: 2}
	// stalled: progressDeadlineSeconds deadline, the status midRollout
	// computes to, and a Progressing condition of reason and status last
	// updated at updated.
	stalled := func(deadline int32, reason string, status corev1.ConditionStatus, updated metav1.Time) func(*appsv1alpha1.CloneSet) {
		return func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.ProgressDeadlineSeconds = new(deadline)
			cs.Status = midStatus
			cs.Status.Conditions = progressing(reason, status, updated)
		}
	}

	for _, tc := range []struct {
		name       string
		cs         func(*appsv1alpha1.CloneSet)
		pods       []*corev1.Pod
		now        time.Time
		wantStatus corev1.ConditionStatus
		wantReason string
		// wantUpdate is the expected lastUpdateTime; wantTransition the lastTransitionTime.
		wantUpdate, wantTransition metav1.Time
	}{
		{
			name:       "paused: Unknown",
			cs:         func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true },
			pods:       midRollout(),
			wantStatus: corev1.ConditionUnknown, wantReason: appsv1alpha1.CloneSetProgressPaused,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name:       "every pod updated and available",
			pods:       allReady(4),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressAvailable,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name:       "partition reached and everything available",
			cs:         func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ios("2") },
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressPartitionAvailable,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name:       "rolling out",
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressUpdated,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name:       "no progress within the deadline: unchanged",
			cs:         stalled(600, appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, metav1.NewTime(now.Add(-599*time.Second))),
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressUpdated,
			wantUpdate: metav1.NewTime(now.Add(-599 * time.Second)), wantTransition: earlier,
		},
		{
			name:       "no progress for progressDeadlineSeconds: ProgressDeadlineExceeded",
			cs:         stalled(600, appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, metav1.NewTime(now.Add(-601*time.Second))),
			pods:       midRollout(),
			wantStatus: corev1.ConditionFalse, wantReason: appsv1alpha1.CloneSetProgressDeadlineExceeded,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name:       "deadline disabled (MaxInt32): never exceeded",
			cs:         stalled(math.MaxInt32, appsv1alpha1.CloneSetProgressUpdated, corev1.ConditionTrue, metav1.NewTime(now.Add(-1000*time.Hour))),
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressUpdated,
			wantUpdate: metav1.NewTime(now.Add(-1000 * time.Hour)), wantTransition: earlier,
		},
		{
			name:       "exceeded stays exceeded without progress",
			cs:         stalled(600, appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, earlier),
			pods:       midRollout(),
			wantStatus: corev1.ConditionFalse, wantReason: appsv1alpha1.CloneSetProgressDeadlineExceeded,
			wantUpdate: earlier, wantTransition: earlier,
		},
		{
			name: "progress after the deadline was exceeded: progressing again",
			cs: func(cs *appsv1alpha1.CloneSet) {
				stalled(600, appsv1alpha1.CloneSetProgressDeadlineExceeded, corev1.ConditionFalse, earlier)(cs)
				cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas, cs.Status.UpdatedAvailableReplicas = 1, 1, 1
			},
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressUpdated,
			wantUpdate: metav1.NewTime(now), wantTransition: metav1.NewTime(now),
		},
		{
			name: "a new rollout after CloneSetAvailable restarts the clock",
			// Counts unchanged: only the reason moved.
			cs:         stalled(600, appsv1alpha1.CloneSetProgressAvailable, corev1.ConditionTrue, earlier),
			pods:       midRollout(),
			wantStatus: corev1.ConditionTrue, wantReason: appsv1alpha1.CloneSetProgressUpdated,
			wantUpdate: metav1.NewTime(now), wantTransition: earlier,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(4)
			if tc.cs != nil {
				tc.cs(cs)
			}
			s := calculateStatus(statusIn(cs, tc.pods...))
			c := cond(s, appsv1alpha1.CloneSetConditionTypeProgressing)
			require.NotNil(t, c)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.wantUpdate, c.LastUpdateTime, "lastUpdateTime")
			assert.Equal(t, tc.wantTransition, c.LastTransitionTime, "lastTransitionTime")
		})
	}
}

func TestPutCondition(t *testing.T) {
	earlier := metav1.NewTime(now.Add(-time.Hour))
	failed := appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionFailedScale, Status: corev1.ConditionTrue,
		Reason: "ScaleFailed", Message: "quota", LastTransitionTime: earlier, LastUpdateTime: earlier}
	prog := appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue,
		Reason: appsv1alpha1.CloneSetProgressUpdated, LastTransitionTime: earlier, LastUpdateTime: earlier}
	old := []appsv1alpha1.CloneSetCondition{failed, prog}
	before := append([]appsv1alpha1.CloneSetCondition(nil), old...)

	for _, tc := range []struct {
		name string
		put  appsv1alpha1.CloneSetCondition
		want []appsv1alpha1.CloneSetCondition
	}{
		{
			name: "nothing changed: old times kept",
			put:  appsv1alpha1.CloneSetCondition{Type: failed.Type, Status: failed.Status, Reason: failed.Reason, Message: failed.Message},
			want: old,
		},
		{
			name: "message changed: transition time kept, update time now",
			put:  appsv1alpha1.CloneSetCondition{Type: failed.Type, Status: corev1.ConditionTrue, Reason: "ScaleFailed", Message: "other"},
			want: []appsv1alpha1.CloneSetCondition{{Type: failed.Type, Status: corev1.ConditionTrue, Reason: "ScaleFailed", Message: "other",
				LastTransitionTime: earlier, LastUpdateTime: metav1.NewTime(now)}, prog},
		},
		{
			name: "status changed: both times now",
			put:  appsv1alpha1.CloneSetCondition{Type: failed.Type, Status: corev1.ConditionFalse, Reason: ReasonScaled},
			want: []appsv1alpha1.CloneSetCondition{{Type: failed.Type, Status: corev1.ConditionFalse, Reason: ReasonScaled,
				LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now)}, prog},
		},
		{
			name: "explicit update time on an unchanged condition is written",
			put: appsv1alpha1.CloneSetCondition{Type: prog.Type, Status: prog.Status, Reason: prog.Reason,
				LastUpdateTime: metav1.NewTime(now.Add(-time.Minute))},
			want: []appsv1alpha1.CloneSetCondition{failed, {Type: prog.Type, Status: prog.Status, Reason: prog.Reason,
				LastTransitionTime: earlier, LastUpdateTime: metav1.NewTime(now.Add(-time.Minute))}},
		},
		{
			name: "new type appended",
			put:  appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionFailedUpdate, Status: corev1.ConditionTrue, Reason: "UpdateFailed"},
			want: []appsv1alpha1.CloneSetCondition{failed, prog, {Type: appsv1alpha1.CloneSetConditionFailedUpdate, Status: corev1.ConditionTrue,
				Reason: "UpdateFailed", LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, putCondition(old, tc.put, now))
			assert.Equal(t, before, old, "input modified")
		})
	}
}

// TestCalculateStatusIsStable: the status computed from a status the
// controller wrote, with nothing new to report, is DeepEqual to it, so
// updateStatus writes nothing.
func TestCalculateStatusIsStable(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   func(*appsv1alpha1.CloneSet)
		pods []*corev1.Pod
		in   func(*statusInput)
	}{
		{name: "complete", pods: allReady(3)},
		{
			name: "mid rollout with a deadline and minReadySeconds",
			cs: func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.ProgressDeadlineSeconds = new(int32(600))
				cs.Spec.MinReadySeconds = 5
			},
			pods: []*corev1.Pod{testPod("web-a"), testPod("web-b", atRev(currentRev)), testPod("web-c", notReady())},
		},
		{name: "paused", cs: func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true }, pods: allReady(2)},
		{
			name: "partition with failures",
			cs:   func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ios("1") },
			pods: []*corev1.Pod{testPod("web-a"), testPod("web-b"), testPod("web-c", atRev(currentRev))},
			in: func(in *statusInput) {
				in.scaleErr = errors.New("quota")
				in.updateErr = errors.New("conflict")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(3)
			if tc.cs != nil {
				tc.cs(cs)
			}
			in := statusIn(cs, tc.pods...)
			if tc.in != nil {
				tc.in(&in)
			}
			first := calculateStatus(in)
			again := calculateStatus(in)
			assert.True(t, apiequality.Semantic.DeepEqual(first, again), "same input, different status:\n%+v\n%+v", first, again)

			// The controller wrote first; a later sync sees it in the CloneSet.
			in.cs = cs.DeepCopy()
			in.cs.Status = first
			in.currentRevision = first.CurrentRevision
			in.now = now.Add(3 * time.Second)
			next := calculateStatus(in)
			assert.True(t, apiequality.Semantic.DeepEqual(first, next), "written status recomputed differently:\n%+v\n%+v", first, next)
		})
	}
}
