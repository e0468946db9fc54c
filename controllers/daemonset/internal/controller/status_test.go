package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

func TestCalculateStatus(t *testing.T) {
	now := t0.Add(10 * time.Second)
	verdicts := map[string]nodeplacement.Verdict{"a": run, "b": run, "c": run, "d": run, "x": keep, "y": evict}
	pods := []*corev1.Pod{
		pod("a1", "a", "h2", 0),              // ready, available, updated
		pod("b1", "b", "h1", 0),              // ready, available, old
		pod("c1", "c", "h2", 0, notReady),    // scheduled, not ready
		pod("x1", "x", "h1", 0),              // misscheduled (NoSchedule keeps it)
		pod("gone", "nowhere", "h2", 0),      // node unknown: not counted
		pod("a2", "a", "h1", 5, preDeleting), // younger: the oldest pod of a node is the one counted
	}
	ds := dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Generation = 4; ds.Spec.MinReadySeconds = 5 })
	s := calculateStatus(statusInput{ds: ds, nodes: state(verdicts, pods...), hash: "h2", minReadySeconds: 5, now: now, observed: true})
	assert.Equal(t, appsv1alpha1.DaemonSetStatus{
		DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberMisscheduled: 1, NumberReady: 2, NumberAvailable: 2,
		UpdatedNumberScheduled: 2, NumberUnavailable: 2, ObservedGeneration: 4, DaemonSetHash: "h2",
	}, s)

	// minReadySeconds not yet elapsed: ready but not available.
	s = calculateStatus(statusInput{ds: ds, nodes: state(verdicts, pods...), hash: "h2", minReadySeconds: 30, now: now, observed: true})
	assert.Equal(t, int32(2), s.NumberReady)
	assert.Equal(t, int32(0), s.NumberAvailable)

	// Not observed (expectations pending): observedGeneration stays.
	ds.Status.ObservedGeneration = 3
	s = calculateStatus(statusInput{ds: ds, nodes: state(verdicts, pods...), hash: "h2", now: now})
	assert.Equal(t, int64(3), s.ObservedGeneration)

	// collisionCount is kept once set; invalid spec sets the condition.
	ds.Status.CollisionCount = ptr.To[int32](0)
	s = calculateStatus(statusInput{ds: ds, nodes: nil, hash: "h2", now: now, invalid: "bad selector", invalidReason: "InvalidSelector"})
	assert.Equal(t, ptr.To[int32](0), s.CollisionCount)
	if assert.Len(t, s.Conditions, 1) {
		assert.Equal(t, appsv1.DaemonSetCondition{Type: ConditionInvalidSpec, Status: corev1.ConditionTrue, Reason: "InvalidSelector", Message: "bad selector",
			LastTransitionTime: s.Conditions[0].LastTransitionTime}, s.Conditions[0])
	}
	ds.Status.Conditions = s.Conditions
	s = calculateStatus(statusInput{ds: ds, hash: "h2", now: now})
	assert.Equal(t, corev1.ConditionFalse, s.Conditions[0].Status, "cleared once valid")
}

// TestStatusCountsPreparingDeleteAvailable: numberAvailable counts a Ready
// PreparingDelete pod, as OpenKruise's does (it still serves; with
// markPodNotReady it is not Ready and does not count); the rolling update's
// budget still treats it as unavailable (daemonAvailable).
func TestStatusCountsPreparingDeleteAvailable(t *testing.T) {
	now := t0.Add(10 * time.Second)
	markedNotReady := func(p *corev1.Pod) { preDeleting(p); notReady(p) }
	inPlaceUpdating := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	cases := []struct {
		name                  string
		pod                   *corev1.Pod
		ready, available      int32
		availableForTheBudget bool
	}{
		{"normal", pod("a1", "a", "h1", 0), 1, 1, true},
		{"PreparingDelete, Ready", pod("a1", "a", "h1", 0, preDeleting), 1, 1, false},
		{"PreparingDelete, marked NotReady", pod("a1", "a", "h1", 0, markedNotReady), 0, 0, false},
		{"in-place update in progress", pod("a1", "a", "h1", 0, inPlaceUpdating), 1, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := calculateStatus(statusInput{ds: dsWith(), nodes: state(allRun("a"), tc.pod), hash: "h1", now: now, observed: true})
			assert.Equal(t, tc.ready, s.NumberReady, "numberReady")
			assert.Equal(t, tc.available, s.NumberAvailable, "numberAvailable")
			assert.Equal(t, 1-tc.available, s.NumberUnavailable, "numberUnavailable")
			assert.Equal(t, tc.availableForTheBudget, daemonAvailable(tc.pod, 0, now), "available for the rolling update")
		})
	}
}

func TestSetConditionAddsNothingWhenNeverInvalid(t *testing.T) {
	assert.Nil(t, setCondition(nil, ConditionInvalidSpec, "", "", t0))
}

func TestCountersOnly(t *testing.T) {
	base := appsv1alpha1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 3, NumberReady: 2,
		ObservedGeneration: 2, DaemonSetHash: "h2"}
	for _, tc := range []struct {
		name   string
		change func(*appsv1alpha1.DaemonSetStatus)
		want   bool
	}{
		{"ready and available", func(s *appsv1alpha1.DaemonSetStatus) { s.NumberReady, s.NumberAvailable = 3, 3 }, true},
		{"scheduled, misscheduled, unavailable, updated", func(s *appsv1alpha1.DaemonSetStatus) {
			s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled, s.NumberUnavailable, s.UpdatedNumberScheduled = 4, 4, 1, 2, 1
		}, true},
		{"observedGeneration", func(s *appsv1alpha1.DaemonSetStatus) { s.ObservedGeneration = 3 }, false},
		{"daemonSetHash", func(s *appsv1alpha1.DaemonSetStatus) { s.DaemonSetHash = "h3" }, false},
		{"collisionCount", func(s *appsv1alpha1.DaemonSetStatus) { s.CollisionCount = ptr.To(int32(1)) }, false},
		{"a condition", func(s *appsv1alpha1.DaemonSetStatus) {
			s.Conditions = []appsv1.DaemonSetCondition{{Type: ConditionInvalidSpec, Status: corev1.ConditionTrue}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := *base.DeepCopy()
			tc.change(&next)
			assert.Equal(t, tc.want, countersOnly(base, next))
		})
	}
}
