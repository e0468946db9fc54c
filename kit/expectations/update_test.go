package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestUpdate(t *testing.T) {
	type store = *Update[string]
	cases := []struct {
		name         string
		do           func(u store, clk *clocktesting.FakeClock)
		wantOK       bool
		wantFor      time.Duration
		wantTimedOut uint64
		wantRevision string
		wantPods     []string
	}{
		{name: "nothing expected", do: func(store, *clocktesting.FakeClock) {}, wantOK: true},
		{
			name: "pending",
			do: func(u store, clk *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				clk.Step(time.Second)
				u.Expect("a", "r2", "p2")
				clk.Step(time.Second)
			},
			wantFor: 2 * time.Second, wantRevision: "r2", wantPods: []string{"p1", "p2"},
		},
		{
			name: "observed at the expected revision",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Expect("a", "r2", "p2")
				u.Observe("a", "p1", "r2")
				u.Observe("a", "p2", "r2")
			},
			wantOK: true,
		},
		{
			name: "observed at the old revision (stale cache)",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Observe("a", "p1", "r1")
			},
			wantRevision: "r2", wantPods: []string{"p1"},
		},
		{
			name: "observing another pod or owner does not settle",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Observe("a", "p2", "r2")
				u.Observe("b", "p1", "r2")
			},
			wantRevision: "r2", wantPods: []string{"p1"},
		},
		{
			name:   "another owner's expectations do not block",
			do:     func(u store, _ *clocktesting.FakeClock) { u.Expect("b", "r2", "p1") },
			wantOK: true,
		},
		{
			name: "a new revision resets the set",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Expect("a", "r2", "p2")
				u.Expect("a", "r3", "p3")
			},
			wantRevision: "r3", wantPods: []string{"p3"},
		},
		{
			name: "after a reset only the new revision settles",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Expect("a", "r3", "p1")
				u.Observe("a", "p1", "r2")
			},
			wantRevision: "r3", wantPods: []string{"p1"},
		},
		{
			name: "after a reset the new set alone must be observed",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Expect("a", "r3", "p2")
				u.Observe("a", "p2", "r3")
			},
			wantOK: true,
		},
		{
			name: "forget drops a pod whatever its revision",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Expect("a", "r2", "p2")
				u.Forget("a", "p1")
			},
			wantRevision: "r2", wantPods: []string{"p2"},
		},
		{
			name: "timeout unblocks and says so",
			do: func(u store, clk *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				clk.Step(time.Minute)
				u.Expect("a", "r2", "p2")
				clk.Step(DefaultTimeout)
			},
			wantOK: true, wantFor: DefaultTimeout + time.Minute, wantTimedOut: 2,
		},
		{
			name: "only timed-out pods are dropped",
			do: func(u store, clk *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				clk.Step(4 * time.Minute)
				u.Expect("a", "r2", "p2")
				clk.Step(time.Minute)
			},
			wantFor: time.Minute, wantTimedOut: 1, wantRevision: "r2", wantPods: []string{"p2"},
		},
		{
			name: "expecting again restarts the timeout",
			do: func(u store, clk *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				clk.Step(4 * time.Minute)
				u.Expect("a", "r2", "p1")
				clk.Step(2 * time.Minute)
			},
			wantFor: 2 * time.Minute, wantRevision: "r2", wantPods: []string{"p1"},
		},
		{
			name: "delete forgets the owner",
			do: func(u store, _ *clocktesting.FakeClock) {
				u.Expect("a", "r2", "p1")
				u.Delete("a")
			},
			wantOK: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			u := NewUpdate[string](WithClock(clk))
			tc.do(u, clk)

			ok, d := u.Satisfied("a")
			assert.Equal(t, tc.wantOK, ok, "ok")
			assert.Equal(t, tc.wantFor, d, "unsatisfiedFor")
			assert.Equal(t, tc.wantTimedOut, u.TimedOut(), "TimedOut")
			rev, pods := u.Pending("a")
			assert.Equal(t, tc.wantRevision, rev, "pending revision")
			assert.Equal(t, tc.wantPods, pods, "pending pods")

			ok2, d2 := u.Satisfied("a")
			assert.Equal(t, ok, ok2, "ok again")
			if ok {
				assert.Zero(t, d2, "unsatisfiedFor again")
			} else {
				assert.Equal(t, d, d2, "unsatisfiedFor again")
			}
		})
	}
}
