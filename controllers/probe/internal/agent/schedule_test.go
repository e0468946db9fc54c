package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// runScheduler runs a scheduler on clk until the test ends; first probes are not spread unless spread is given.
func runScheduler(t *testing.T, clk *clocktesting.FakeClock, spread ...func(time.Duration) time.Duration) *scheduler {
	t.Helper()
	s := newScheduler(clk)
	s.spread = func(time.Duration) time.Duration { return 0 }
	if len(spread) > 0 {
		s.spread = spread[0]
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func expectProbe(t *testing.T, calls <-chan Target, what string) {
	t.Helper()
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatalf("no probe: %s", what)
	}
}

func expectNoProbe(t *testing.T, calls <-chan Target, what string) {
	t.Helper()
	select {
	case <-calls:
		t.Fatalf("probed: %s", what)
	case <-time.After(100 * time.Millisecond): // a probe that would come is started at once by a timer already fired
	}
}

// waitTimer polls until the scheduler waits on its timer for the next probe.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("scheduler not waiting on its timer")
		}
		time.Sleep(time.Millisecond) // poll for the scheduler's goroutine to reach its select
	}
}

// TestSchedulerPeriodChange: the first probe runs at once; a new periodSeconds applies from the probe after the
// next one.
func TestSchedulerPeriodChange(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started.Add(-time.Hour), corev1.Probe{PeriodSeconds: 10}, ok)
	clk.SetTime(started)
	s := runScheduler(t, clk)
	s.add(w)
	expectProbe(t, pr.calls, "first probe at start")
	waitTimer(t, clk)
	w.update("", corev1.Probe{PeriodSeconds: 2, ProbeHandler: w.spec.ProbeHandler})
	clk.Step(9 * time.Second)
	expectNoProbe(t, pr.calls, "before the old period is over")
	clk.Step(time.Second) // the probe already scheduled comes at the old period
	expectProbe(t, pr.calls, "old period")
	waitTimer(t, clk)
	clk.Step(2 * time.Second)
	expectProbe(t, pr.calls, "new period of 2s")
}

// TestSchedulerStop: a stopped worker is not probed again, and the others go on.
func TestSchedulerStop(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started.Add(-time.Hour), corev1.Probe{PeriodSeconds: 1}, ok)
	other := newWorker(w.agent, workerKey{UID: "u", Namespace: "ns", Pod: "p", Container: "main", Probe: "m#other"}, "",
		corev1.Probe{PeriodSeconds: 3, ProbeHandler: w.spec.ProbeHandler}, nil)
	clk.SetTime(started)
	s := runScheduler(t, clk)
	s.add(w)
	s.add(other)
	expectProbe(t, pr.calls, "first of one")
	expectProbe(t, pr.calls, "first of the other")
	waitTimer(t, clk)
	w.stop()
	for i := 0; i < 2; i++ {
		clk.Step(time.Second)
		expectNoProbe(t, pr.calls, "the stopped worker")
	}
	clk.Step(time.Second)
	expectProbe(t, pr.calls, "the other worker, 3 s later")
}

// gateProber blocks each probe until the test releases it, and counts probes running at once.
type gateProber struct {
	calls   chan Target
	release chan struct{}
	running atomic.Int32
	most    atomic.Int32
}

func (p *gateProber) Probe(ctx context.Context, t Target) (appsv1alpha1.ProbeState, string) {
	n := p.running.Add(1)
	defer p.running.Add(-1)
	if n > p.most.Load() {
		p.most.Store(n)
	}
	p.calls <- t
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return appsv1alpha1.ProbeSucceeded, ""
}

// TestSchedulerSlowProbe: a probe slower than its period is never run twice at once; the next one starts as soon as
// it returns.
func TestSchedulerSlowProbe(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, _ := workerFixture(t, started.Add(-time.Hour), corev1.Probe{PeriodSeconds: 1})
	pr := &gateProber{calls: make(chan Target, 10), release: make(chan struct{})}
	w.agent.prober = pr
	clk.SetTime(started)
	s := runScheduler(t, clk)
	s.add(w)
	expectProbe(t, pr.calls, "first probe")
	clk.Step(5 * time.Second) // five periods pass while it runs
	expectNoProbe(t, pr.calls, "a second run while the first is in flight")
	pr.release <- struct{}{}
	expectProbe(t, pr.calls, "the next probe, at once")
	pr.release <- struct{}{}
	waitTimer(t, clk)
	if got := pr.most.Load(); got != 1 {
		t.Fatalf("%d probes of one worker ran at once", got)
	}
}

// TestSchedulerSpreadsFirstProbesAfterStart: the probes added within a period of the agent's start wait a random
// part of their period (here half) before their first run, as kruise-daemon's do; one added later runs at once.
func TestSchedulerSpreadsFirstProbesAfterStart(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started.Add(-time.Hour), corev1.Probe{PeriodSeconds: 10}, ok)
	clk.SetTime(started)
	s := runScheduler(t, clk, func(p time.Duration) time.Duration { return p / 2 })
	s.add(w)
	waitTimer(t, clk)
	expectNoProbe(t, pr.calls, "at the agent's start")
	clk.Step(5 * time.Second)
	expectProbe(t, pr.calls, "half a period after the start")

	clk.Step(10 * time.Second) // the start is a period behind
	expectProbe(t, pr.calls, "the first worker's next period")
	later := newWorker(w.agent, workerKey{UID: "u", Namespace: "ns", Pod: "p", Container: "main", Probe: "m#later"}, "",
		corev1.Probe{PeriodSeconds: 10, ProbeHandler: w.spec.ProbeHandler}, nil)
	s.add(later)
	expectProbe(t, pr.calls, "a probe added a period after the start, at once")
}

// TestSchedulerGrid: runs fall on the one-second grid from the scheduler's start, so the probes of a node wake the
// agent at most once a second; a worker added between two points runs at the next.
func TestSchedulerGrid(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started.Add(-time.Hour), corev1.Probe{PeriodSeconds: 2}, ok)
	clk.SetTime(started)
	s := runScheduler(t, clk)
	clk.Step(20*time.Second + 300*time.Millisecond)
	s.add(w)
	waitTimer(t, clk)
	expectNoProbe(t, pr.calls, "between two grid points")
	clk.Step(700 * time.Millisecond)
	expectProbe(t, pr.calls, "at the next grid point")
	waitTimer(t, clk)
	clk.Step(time.Second)
	expectNoProbe(t, pr.calls, "before the period is over")
	clk.Step(time.Second)
	expectProbe(t, pr.calls, "a period later, on the grid")
}
