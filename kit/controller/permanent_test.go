package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	testingclock "k8s.io/utils/clock/testing"
)

var errInvalid = Permanent(errors.New("spec.x is invalid"))

func TestRetryable(t *testing.T) {
	transient := errors.New("connection refused")
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
		rest      error // nil: Retryable returns nil; else what errors.Is must find in it
	}{
		{name: "nil", err: nil},
		{name: "transient", err: transient, rest: transient},
		{name: "permanent", err: errInvalid, permanent: true},
		{name: "wrapped permanent", err: fmt.Errorf("pod web-0: %w", errInvalid), permanent: true},
		{name: "Permanent of a wrapped error", err: Permanent(fmt.Errorf("create job: %w", transient)), permanent: true},
		{name: "joined permanents", err: errors.Join(errInvalid, Permanent(errors.New("other"))), permanent: true},
		{name: "permanent next to transient", err: errors.Join(errInvalid, transient), rest: transient},
		{name: "multi-%w", err: fmt.Errorf("scale: %w; update: %w", transient, errInvalid), rest: transient},
		{name: "nested join", err: errors.Join(errors.Join(errInvalid, transient), errInvalid), rest: transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.permanent, IsPermanent(tc.err))
			rest := Retryable(tc.err)
			if tc.rest == nil {
				assert.NoError(t, rest)
				return
			}
			assert.ErrorIs(t, rest, tc.rest)
			assert.NotErrorIs(t, rest, errInvalid, "the permanent part is dropped")
		})
	}
	assert.Nil(t, Permanent(nil))
	assert.ErrorIs(t, fmt.Errorf("pod web-0: %w", errInvalid), errInvalid, "sentinels still match")
	var target *testErr
	assert.ErrorAs(t, Permanent(&testErr{"x"}), &target)
}

type testErr struct{ s string }

func (e *testErr) Error() string { return e.s }

// A permanent error is logged and forgotten like success: no back-off retry,
// and the failure history of earlier transient errors is cleared.
func TestLoopDoesNotRetryPermanentErrors(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := testQueue(clk)
	r := &recorder{fn: func(n int, key string) error {
		switch {
		case key != "a":
			return nil
		case n == 1:
			return errors.New("transient")
		default:
			return fmt.Errorf("pod a-0: %w", errInvalid)
		}
	}}
	stop := startLoop(t, NewLoop("permanent", q, r.sync), 1)
	defer stop()
	q.Enqueue("a")
	eventually(t, func() bool { return r.count() == 1 && q.NumRequeues("a") == 1 }, "transient failure requeued")
	waitRequeueArmed(t, clk)
	clk.Step(time.Second)
	eventually(t, func() bool { clk.Step(0); return r.count() == 2 }, "retried, now failing permanently")
	// One worker: once b is synced, a's permanent failure was handled.
	q.Enqueue("b")
	eventually(t, func() bool { return r.count() == 3 }, "b synced")
	assert.Equal(t, 0, q.NumRequeues("a"), "failure history forgotten")
	assert.Equal(t, 0, q.Len())
	assert.Equal(t, 1, clk.Waiters(), "no requeue timer armed, only the queue's heartbeat")
	clk.Step(time.Hour)
	assert.Never(t, func() bool { clk.Step(0); return r.count() > 3 }, 50*time.Millisecond, time.Millisecond, "never retried")
}

// A transient error next to a permanent one is still retried.
func TestLoopRetriesTransientNextToPermanent(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := testQueue(clk)
	r := &recorder{fn: func(n int, _ string) error {
		if n == 1 {
			return errors.Join(errInvalid, errors.New("transient"))
		}
		return nil
	}}
	stop := startLoop(t, NewLoop("mixed", q, r.sync), 1)
	defer stop()
	q.Enqueue("a")
	eventually(t, func() bool { return r.count() == 1 && q.NumRequeues("a") == 1 }, "requeued with back-off")
	waitRequeueArmed(t, clk)
	clk.Step(time.Second)
	eventually(t, func() bool { clk.Step(0); return r.count() == 2 }, "retried")
}
