package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

type recorder struct {
	mu    sync.Mutex
	calls []string
	fn    func(n int, key string) error
}

func (r *recorder) sync(_ context.Context, key string) error {
	r.mu.Lock()
	r.calls = append(r.calls, key)
	n := len(r.calls)
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(n, key)
	}
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// Conditions that wait for a delayed requeue call clk.Step(0): the queue's
// waiting loop arms its fake-clock timer asynchronously, possibly after the
// test stepped the clock, and Step(0) fires timers already due without moving
// time, so the back-off assertions stay exact.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, msg)
}

// waitRequeueArmed returns once a failed key's delayed requeue holds a timer
// on clk. NumRequeues counts the failure before AddAfter reads the clock, so
// a test that moved the clock on that signal alone could push the deadline
// out by the step and wait forever. The queue's heartbeat ticker is the
// other waiter.
func waitRequeueArmed(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	eventually(t, func() bool { return clk.Waiters() >= 2 }, "requeue timer armed")
}

// startLoop runs l (a Loop or a Reconciler) and returns what stops it.
func startLoop(t *testing.T, l interface {
	Run(ctx context.Context, workers int) error
}, workers int) (cancel func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, workers) }()
	return func() {
		stop()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}

func testQueue(clk *testingclock.FakeClock) *Queue[string] {
	o := DefaultQueueOptions()
	o.BaseDelay = time.Second
	return NewQueue[string]("test", o, QueueConfig{Clock: clk})
}

func TestLoopSuccessForgets(t *testing.T) {
	q := testQueue(testingclock.NewFakeClock(time.Now()))
	r := &recorder{}
	l := NewLoop("ok", q, r.sync)
	assert.Equal(t, "ok", l.Name())
	stop := startLoop(t, l, 2)
	q.Enqueue("a")
	q.Enqueue("b")
	eventually(t, func() bool { return r.count() == 2 }, "both keys synced")
	eventually(t, func() bool { return q.Len() == 0 && q.NumRequeues("a") == 0 && q.NumRequeues("b") == 0 }, "forgotten")
	stop()
	assert.True(t, q.ShuttingDown())
}

func TestLoopErrorRequeuesWithBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := testQueue(clk)
	r := &recorder{fn: func(n int, _ string) error {
		if n == 1 {
			return errors.New("transient")
		}
		return nil
	}}
	stop := startLoop(t, NewLoop("retry", q, r.sync), 1)
	defer stop()
	q.Enqueue("a")
	eventually(t, func() bool { return r.count() == 1 && q.NumRequeues("a") == 1 }, "failed once, requeue recorded")
	waitRequeueArmed(t, clk)
	assert.Equal(t, 0, q.Len(), "not retried before the back-off elapses")

	clk.Step(999 * time.Millisecond)
	assert.Never(t, func() bool { clk.Step(0); return r.count() > 1 }, 50*time.Millisecond, time.Millisecond, "still backing off")
	clk.Step(time.Millisecond)
	eventually(t, func() bool { clk.Step(0); return r.count() == 2 }, "retried after 1s")
	eventually(t, func() bool { return q.NumRequeues("a") == 0 }, "forgotten after success")
}

func TestLoopRecoversFromPanic(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := testQueue(clk)
	r := &recorder{fn: func(n int, _ string) error {
		if n == 1 {
			panic("boom")
		}
		return nil
	}}
	stop := startLoop(t, NewLoop("panicky", q, r.sync), 1)
	defer stop()
	q.Enqueue("a")
	eventually(t, func() bool { return r.count() == 1 && q.NumRequeues("a") == 1 }, "panic became a requeue")
	waitRequeueArmed(t, clk)
	clk.Step(time.Second)
	eventually(t, func() bool { clk.Step(0); return r.count() == 2 }, "worker survived the panic and retried")
}

func TestSafeSyncWrapsPanic(t *testing.T) {
	l := NewLoop("p", testQueue(testingclock.NewFakeClock(time.Now())), func(context.Context, string) error { panic("x") })
	err := l.safeSync(context.Background(), "k")
	require.ErrorIs(t, err, ErrPanic)
	assert.Contains(t, err.Error(), "x")
}

func TestLoopShutdownWaitsForInFlightSync(t *testing.T) {
	q := testQueue(testingclock.NewFakeClock(time.Now()))
	started := make(chan struct{})
	var finished sync.WaitGroup
	finished.Add(1)
	l := NewLoop("slow", q, func(ctx context.Context, _ string) error {
		close(started)
		<-ctx.Done()
		finished.Done()
		return ctx.Err()
	})
	stop := startLoop(t, l, 1)
	q.Enqueue("a")
	<-started
	stop() // returns only after the sync returned
	finished.Wait()
	assert.Equal(t, 0, q.NumRequeues("a"), "cancellation errors are not requeued")
}

func TestLoopRejectsZeroWorkers(t *testing.T) {
	l := NewLoop("z", testQueue(testingclock.NewFakeClock(time.Now())), func(context.Context, string) error { return nil })
	assert.Error(t, l.Run(context.Background(), 0))
}
