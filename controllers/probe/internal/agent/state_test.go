package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

const (
	ok   = appsv1alpha1.ProbeSucceeded
	fail = appsv1alpha1.ProbeFailed
	unk  = appsv1alpha1.ProbeUnknown
)

func TestTrackerThresholds(t *testing.T) {
	type step struct {
		result  appsv1alpha1.ProbeState
		want    appsv1alpha1.ProbeState
		changed bool
	}
	cases := []struct {
		name             string
		start            tracker
		success, failure int32
		steps            []step
	}{
		{"defaults publish the first result", newTracker(), 0, 0, []step{
			{ok, ok, true}, {ok, ok, false}, {fail, fail, true}, {ok, ok, true}}},
		{"failureThreshold 3 keeps Succeeded through two failures", newTracker(), 1, 3, []step{
			{ok, ok, true}, {fail, ok, false}, {fail, ok, false}, {fail, fail, true}, {fail, fail, false}}},
		{"a success breaks the failure run", newTracker(), 1, 2, []step{
			{ok, ok, true}, {fail, ok, false}, {ok, ok, false}, {fail, ok, false}, {fail, fail, true}}},
		{"successThreshold 2 from Unknown", newTracker(), 2, 1, []step{
			{ok, unk, false}, {ok, ok, true}, {fail, fail, true}, {ok, fail, false}, {ok, ok, true}}},
		{"seeded Succeeded: agreeing probe changes nothing", seededTracker(appsv1alpha1.ContainerProbeState{State: ok}, 1, 3), 1, 3, []step{
			{ok, ok, false}, {fail, ok, false}, {fail, ok, false}, {fail, fail, true}}},
		{"seeded Failed needs successThreshold successes", seededTracker(appsv1alpha1.ContainerProbeState{State: fail}, 2, 1), 2, 1, []step{
			{fail, fail, false}, {ok, fail, false}, {ok, ok, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.start
			for i, s := range tc.steps {
				changed := tr.observe(s.result, "", tc.success, tc.failure)
				if tr.State != s.want || changed != s.changed {
					t.Fatalf("step %d (%s): state %s changed %v, want %s changed %v", i, s.result, tr.State, changed, s.want, s.changed)
				}
			}
		})
	}
}

func TestTrackerMessageChangeIsAChange(t *testing.T) {
	tr := newTracker()
	if !tr.observe(fail, "connection refused", 1, 1) {
		t.Fatal("first failure not published")
	}
	if tr.observe(fail, "connection refused", 1, 1) {
		t.Fatal("same failure published again")
	}
	if !tr.observe(fail, "timeout", 1, 1) || tr.Message != "timeout" {
		t.Fatalf("new message not published: %+v", tr)
	}
}

func TestProbeDue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	started := clk.Now()
	cases := []struct {
		name    string
		after   time.Duration
		initial int32
		want    bool
	}{
		{"no delay still waits one second", 500 * time.Millisecond, 0, false},
		{"no delay, one second later", time.Second, 0, true},
		{"within initialDelaySeconds", 9 * time.Second, 10, false},
		{"initialDelaySeconds passed", 10 * time.Second, 10, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktesting.NewFakeClock(started)
			c.Step(tc.after)
			if got := probeDue(c.Now(), started, tc.initial); got != tc.want {
				t.Fatalf("probeDue = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSeedValid(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 10, 500e6, time.UTC)
	cases := []struct {
		name string
		last time.Time
		want bool
	}{
		{"probed after the container started", started.Add(time.Minute), true},
		{"same second (status times have second precision)", started.Truncate(time.Second), true},
		{"probed before: a previous container's result", started.Add(-time.Minute), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := appsv1alpha1.ContainerProbeState{State: ok, LastProbeTime: metav1.NewTime(tc.last)}
			if got := seedValid(s, started); got != tc.want {
				t.Fatalf("seedValid = %v, want %v", got, tc.want)
			}
		})
	}
}
