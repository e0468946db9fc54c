package controller

import (
	"sync"
	"time"
)

// StatusPacer spaces the status writes of one workload whose only news is
// its pod counters. While a thousand pods come up their readiness changes
// many times a second; writing each change costs the API server (the
// bottleneck of a scale-up) a request per sync for a number that is stale a
// moment later. The caller writes anything else (generation, revisions,
// conditions) at once, and requeues the workload for Wait's duration when it
// holds counters back, so the last counts are always written.
type StatusPacer[K comparable] struct {
	// Interval between two counters-only writes of one key.
	Interval time.Duration

	mu   sync.Mutex
	last map[K]time.Time
}

// Wait is how long a counters-only write for key must still wait at now: 0
// when it may go now.
func (p *StatusPacer[K]) Wait(key K, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.Interval).Sub(now))
}

// Wrote records a status write of key at now (of any kind).
func (p *StatusPacer[K]) Wrote(key K, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[K]time.Time{}
	}
	p.last[key] = now
}

// Forget drops key (its workload is gone).
func (p *StatusPacer[K]) Forget(key K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}
