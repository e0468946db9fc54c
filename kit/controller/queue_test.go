package controller

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

func TestQueueOptionsDefaultsAndFlags(t *testing.T) {
	o := DefaultQueueOptions()
	assert.Equal(t, 5*time.Millisecond, o.BaseDelay)
	assert.Equal(t, 1000*time.Second, o.MaxDelay)
	assert.Equal(t, 10.0, o.QPS)
	assert.Equal(t, 100, o.BucketSize)
	assert.Equal(t, 3*time.Second, o.InitialDelayBase)
	assert.Equal(t, 30*time.Second, o.InitialDelayMax)
	assert.False(t, o.DisableInitialDelay)
	require.NoError(t, o.Validate())

	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--rate-limiter-base-delay=10ms", "--rate-limiter-max-delay=1m", "--rate-limiter-qps=5",
		"--rate-limiter-bucket-size=7", "--initial-list-delay-base=1s", "--initial-list-delay-max=4s",
		"--disable-initial-list-delay",
	}))
	assert.Equal(t, QueueOptions{BaseDelay: 10 * time.Millisecond, MaxDelay: time.Minute, QPS: 5, BucketSize: 7,
		InitialDelayBase: time.Second, InitialDelayMax: 4 * time.Second, DisableInitialDelay: true}, o)

	bad := DefaultQueueOptions()
	bad.MaxDelay = time.Millisecond
	assert.Error(t, bad.Validate())
	bad = DefaultQueueOptions()
	bad.QPS = 0
	assert.Error(t, bad.Validate())
}

func TestRateLimiterIsMaxOfExponentialAndBucket(t *testing.T) {
	o := DefaultQueueOptions()
	o.BucketSize = 1
	o.QPS = 0.001 // second token far away
	rl := NewRateLimiter[string](o)
	assert.Equal(t, 5*time.Millisecond, rl.When("a"), "first: exponential base, bucket has a token")
	d := rl.When("a")
	assert.Greater(t, d, 10*time.Second, "bucket empty: bucket delay dominates")
	rl.Forget("a")
	assert.Equal(t, 0, rl.NumRequeues("a"))

	o = DefaultQueueOptions()
	rl = NewRateLimiter[string](o)
	for i := 0; i < 30; i++ {
		rl.When("b")
	}
	assert.Equal(t, 1000*time.Second, rl.When("b"), "capped at max delay")
}

// waitLen polls q.Len() until it equals want or a short deadline passes.
func waitLen[T comparable](q *Queue[T], want int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if q.Len() == want {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return q.Len() == want
}

// stepUntilLen advances the fake clock in steps until q holds want items and
// returns how much fake time that took.
func stepUntilLen[T comparable](t *testing.T, clk *testingclock.FakeClock, q *Queue[T], want int, step, max time.Duration) time.Duration {
	t.Helper()
	var elapsed time.Duration
	for elapsed <= max {
		if waitLen(q, want, 20*time.Millisecond) {
			return elapsed
		}
		clk.Step(step)
		elapsed += step
	}
	t.Fatalf("queue did not reach %d items within %s of fake time (has %d)", want, max, q.Len())
	return 0
}

func TestInitialDelaySequence(t *testing.T) {
	q := NewQueue[string]("seq", DefaultQueueOptions(), QueueConfig{Clock: testingclock.NewFakeClock(time.Now())})
	defer q.ShutDown()
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, q.initial.When("a"))
	}
	assert.Equal(t, []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 30 * time.Second, 30 * time.Second}, got)
	assert.Equal(t, 3*time.Second, q.initial.When("b"), "per key")
}

func TestEnqueueInitialIsDelayedLiveIsImmediate(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := NewQueue[string]("delay", DefaultQueueOptions(), QueueConfig{Clock: clk})
	defer q.ShutDown()

	// Three replayed dependents of owner "a" and one of "b".
	q.EnqueueEvent("a", true)
	q.EnqueueEvent("a", true)
	q.EnqueueEvent("a", true)
	q.EnqueueEvent("b", true)
	assert.Equal(t, 0, q.Len(), "initial-list keys are not ready at once")
	assert.Equal(t, 3, q.initial.NumRequeues("a"))

	// A live event for "c" is immediate.
	q.EnqueueEvent("c", false)
	require.True(t, waitLen(q, 1, time.Second))
	c, _ := q.Get()
	assert.Equal(t, "c", c)
	q.Done(c)

	elapsed := stepUntilLen(t, clk, q, 2, 100*time.Millisecond, 10*time.Second)
	assert.GreaterOrEqual(t, elapsed, 3*time.Second, "first delay is 3s")
	assert.Less(t, elapsed, 4*time.Second)

	// A live add of "a" resets its initial back-off.
	q.Enqueue("a")
	assert.Equal(t, 0, q.initial.NumRequeues("a"))
	assert.Equal(t, 1, q.initial.NumRequeues("b"))
	q.ForgetInitial("b")
	assert.Equal(t, 0, q.initial.NumRequeues("b"))
}

func TestInitialDelayDisabled(t *testing.T) {
	o := DefaultQueueOptions()
	o.DisableInitialDelay = true
	q := NewQueue[string]("nodelay", o, QueueConfig{Clock: testingclock.NewFakeClock(time.Now())})
	defer q.ShutDown()
	q.EnqueueEvent("a", true)
	q.EnqueueEvent("b", true)
	assert.True(t, waitLen(q, 2, time.Second))
	assert.Equal(t, "nodelay", q.Name())
}
