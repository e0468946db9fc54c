package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	ownerA = types.NamespacedName{Namespace: "ns", Name: "a"}
	ownerB = types.NamespacedName{Namespace: "ns", Name: "b"}
)

func TestScale(t *testing.T) {
	type store = *Scale[types.NamespacedName]
	cases := []struct {
		name         string
		do           func(s store, clk *clocktesting.FakeClock)
		wantOK       bool
		wantFor      time.Duration
		wantTimedOut uint64
		wantCreates  []string
		wantDeletes  []string
	}{
		{name: "nothing expected", do: func(store, *clocktesting.FakeClock) {}, wantOK: true},
		{
			name: "pending create reports its age",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(time.Minute)
			},
			wantFor: time.Minute, wantCreates: []string{"p1"},
		},
		{
			name: "observed create",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				s.Observe(ownerA, Create, "p1")
			},
			wantOK: true,
		},
		{
			name: "observed delete",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Delete, "p1")
				s.Observe(ownerA, Delete, "p1")
			},
			wantOK: true,
		},
		{
			name: "observing the other action does not settle",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				s.Observe(ownerA, Delete, "p1")
			},
			wantCreates: []string{"p1"},
		},
		{
			name: "observing another name does not settle",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				s.Observe(ownerA, Create, "p2")
			},
			wantCreates: []string{"p1"},
		},
		{
			name: "observing for another owner does not settle",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				s.Observe(ownerB, Create, "p1")
			},
			wantCreates: []string{"p1"},
		},
		{
			name: "another owner's expectations do not block",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerB, Create, "p1")
			},
			wantOK: true,
		},
		{
			name: "creates and deletes must all be observed; age is the oldest pending",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(time.Second)
				s.Expect(ownerA, Delete, "p3")
				clk.Step(time.Second)
				s.Expect(ownerA, Delete, "p2")
				s.Observe(ownerA, Create, "p1")
			},
			wantFor: time.Second, wantDeletes: []string{"p2", "p3"},
		},
		{
			name: "just before the timeout still blocks",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(DefaultTimeout - time.Nanosecond)
			},
			wantFor: DefaultTimeout - time.Nanosecond, wantCreates: []string{"p1"},
		},
		{
			name: "timeout unblocks and says so",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(time.Minute)
				s.Expect(ownerA, Delete, "p2")
				clk.Step(DefaultTimeout)
			},
			wantOK: true, wantFor: DefaultTimeout + time.Minute, wantTimedOut: 2,
		},
		{
			name: "only timed-out entries are dropped",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(3 * time.Minute)
				s.Expect(ownerA, Create, "p2")
				clk.Step(2 * time.Minute)
			},
			wantFor: 2 * time.Minute, wantTimedOut: 1, wantCreates: []string{"p2"},
		},
		{
			name: "expecting again restarts the timeout",
			do: func(s store, clk *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				clk.Step(4 * time.Minute)
				s.Expect(ownerA, Create, "p1")
				clk.Step(2 * time.Minute)
			},
			wantFor: 2 * time.Minute, wantCreates: []string{"p1"},
		},
		{
			name: "delete forgets the owner",
			do: func(s store, _ *clocktesting.FakeClock) {
				s.Expect(ownerA, Create, "p1")
				s.Expect(ownerA, Delete, "p2")
				s.Expect(ownerB, Create, "p1")
				s.Delete(ownerA)
			},
			wantOK: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			s := NewScale[types.NamespacedName](WithClock(clk))
			tc.do(s, clk)

			ok, d := s.Satisfied(ownerA)
			assert.Equal(t, tc.wantOK, ok, "ok")
			assert.Equal(t, tc.wantFor, d, "unsatisfiedFor")
			assert.Equal(t, tc.wantTimedOut, s.TimedOut(), "TimedOut")
			assert.Equal(t, tc.wantCreates, s.Pending(ownerA, Create), "pending creates")
			assert.Equal(t, tc.wantDeletes, s.Pending(ownerA, Delete), "pending deletes")

			// Asking again at the same time: a timeout is reported only once.
			ok2, d2 := s.Satisfied(ownerA)
			assert.Equal(t, ok, ok2, "ok again")
			if ok {
				assert.Zero(t, d2, "unsatisfiedFor again")
			} else {
				assert.Equal(t, d, d2, "unsatisfiedFor again")
			}
			assert.Equal(t, tc.wantTimedOut, s.TimedOut(), "TimedOut again")
		})
	}
}

func TestScaleZeroTimeClock(t *testing.T) {
	// The zero time is a valid clock reading, not "no expectation".
	clk := clocktesting.NewFakeClock(time.Time{})
	s := NewScale[string](WithClock(clk), WithTimeout(time.Minute))
	s.Expect("a", Create, "p1")
	ok, _ := s.Satisfied("a")
	assert.False(t, ok)
	clk.Step(time.Minute)
	ok, d := s.Satisfied("a")
	assert.True(t, ok)
	assert.Equal(t, time.Minute, d)
}

func TestScaleInvalidAction(t *testing.T) {
	s := NewScale[string]()
	assert.PanicsWithValue(t, "expectations: invalid Action(7)", func() { s.Expect("a", Action(7), "p") })
	assert.Panics(t, func() { s.Observe("a", Action(2), "p") })
	assert.Panics(t, func() { s.Pending("a", Action(2)) })
}

func TestActionString(t *testing.T) {
	assert.Equal(t, "create", Create.String())
	assert.Equal(t, "delete", Delete.String())
	assert.Equal(t, "Action(9)", Action(9).String())
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want time.Duration
	}{
		{name: "default", want: DefaultTimeout},
		{name: "set", opts: []Option{WithTimeout(time.Minute)}, want: time.Minute},
		{name: "zero means default", opts: []Option{WithTimeout(0)}, want: DefaultTimeout},
		{name: "negative means default", opts: []Option{WithTimeout(-time.Second)}, want: DefaultTimeout},
		{name: "nil clock means real clock", opts: []Option{WithClock(nil), WithTimeout(time.Hour)}, want: time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, NewScale[string](tc.opts...).Timeout())
			assert.Equal(t, tc.want, NewUpdate[string](tc.opts...).Timeout())
			assert.Equal(t, tc.want, NewResourceVersion(tc.opts...).Timeout())
			// A custom timeout is what Satisfied applies.
			clk := clocktesting.NewFakeClock(time.Now())
			s := NewScale[string](append(tc.opts, WithClock(clk))...)
			s.Expect("a", Create, "p")
			clk.Step(tc.want - time.Nanosecond)
			ok, _ := s.Satisfied("a")
			assert.False(t, ok, "before the timeout")
			clk.Step(time.Nanosecond)
			ok, _ = s.Satisfied("a")
			assert.True(t, ok, "at the timeout")
		})
	}
	// The real clock is used when none is given: a fresh expectation blocks.
	s := NewScale[string](WithClock(nil))
	s.Expect("a", Create, "p")
	ok, d := s.Satisfied("a")
	assert.False(t, ok)
	assert.Less(t, d, time.Minute)
}
