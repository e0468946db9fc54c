package agent

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// scheduler runs every probe worker once per period from one goroutine and one timer: a heap of the workers' next
// run times. Each run is a goroutine of its own that ends with the probe, so a node of 300 probes at rest holds the
// goroutines of the probes in flight, not 300 parked ones with the stacks their last probe grew (issue 28: 4.7 MiB
// of the agent's memory). A worker is never run twice at once: it is out of the heap while it runs and goes back
// when its probe returns.
//
// Runs fall on a grid of probeGrid from the scheduler's start (periods are whole seconds, so a worker stays on it):
// the agent wakes at most once per grid step whatever the number of probes. Waking for each probe at its own
// instant cost three times the CPU at rest (bench/RESULTS.md): every wake-up from idle has the runtime's threads
// look for work.
type scheduler struct {
	clock  clock.Clock
	origin time.Time // the start, and the grid's origin
	wake   chan struct{}
	// spread returns a random part of a period, a multiple of probeGrid: as in kruise-daemon, a probe added within
	// one period of the agent's start waits that long before its first run, so that after a restart the node's
	// probes do not all run at the same instant of every period.
	spread func(period time.Duration) time.Duration

	mu  sync.Mutex
	due dueHeap

	inFlight sync.WaitGroup
}

// probeGrid is the step of the grid probes run on.
const probeGrid = time.Second

// scheduled is one worker's place in the heap.
type scheduled struct {
	w  *worker
	at time.Time
}

func newScheduler(clk clock.Clock) *scheduler {
	return &scheduler{clock: clk, origin: clk.Now(), wake: make(chan struct{}, 1),
		spread: func(p time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(p/probeGrid))) * probeGrid }}
}

// onGrid is the first grid point at or after t.
func (s *scheduler) onGrid(t time.Time) time.Time {
	steps := (t.Sub(s.origin) + probeGrid - 1) / probeGrid
	return s.origin.Add(steps * probeGrid)
}

// add schedules w's first run: at the next grid point, or a random part of its period later when the agent
// started less than a period ago.
func (s *scheduler) add(w *worker) {
	now := s.clock.Now()
	at := s.onGrid(now)
	if p := w.period(); now.Sub(s.origin) < p {
		at = at.Add(s.spread(p))
	}
	s.push(&scheduled{w: w, at: at})
}

// push puts e in the heap, and wakes the scheduler only when e comes first: otherwise its timer is still right
// (a probe's return usually schedules a run a period away, and wakes nobody).
func (s *scheduler) push(e *scheduled) {
	s.mu.Lock()
	heap.Push(&s.due, e)
	first := s.due[0] == e
	s.mu.Unlock()
	if first {
		signal(s.wake)
	}
}

// run starts the probes as they fall due until ctx ends, then waits for those in flight.
func (s *scheduler) run(ctx context.Context) {
	defer s.inFlight.Wait()
	for {
		wait, ok := s.startDue(ctx)
		var timer clock.Timer
		var fired <-chan time.Time
		if ok {
			timer = s.clock.NewTimer(wait)
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-s.wake:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// startDue starts the run of every worker due by now and returns the wait until the next one (ok false: none is
// scheduled). Stopped workers leave the heap here.
func (s *scheduler) startDue(ctx context.Context) (wait time.Duration, ok bool) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.due) > 0 {
		e := s.due[0]
		if e.w.isStopped() {
			heap.Pop(&s.due)
			continue
		}
		if e.at.After(now) {
			return e.at.Sub(now), true
		}
		heap.Pop(&s.due)
		s.inFlight.Add(1)
		go s.runOnce(ctx, e)
	}
	return 0, false
}

// runOnce probes once and schedules the worker's next probe one period (as its spec says now) after this one was
// due; when the probe took longer than that, at the next grid point.
func (s *scheduler) runOnce(ctx context.Context, e *scheduled) {
	defer s.inFlight.Done()
	e.w.probeOnce(ctx)
	if e.w.isStopped() || ctx.Err() != nil {
		return
	}
	e.at = e.at.Add(e.w.period())
	if now := s.clock.Now(); e.at.Before(now) {
		e.at = s.onGrid(now)
	}
	s.push(e)
}

// dueHeap orders scheduled workers by their next run (container/heap).
type dueHeap []*scheduled

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(*scheduled)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
