package controller

import (
	"sync"
	"time"
)

// Requeue collects the time-driven requeues the steps of one sync ask for
// (minReadySeconds, grace periods, deadlines) and keeps the earliest. Steps
// that write in parallel may call After concurrently. The zero value is
// ready to use.
type Requeue struct {
	mu    sync.Mutex
	after time.Duration
}

// After asks for a requeue in d; d <= 0 asks for nothing.
func (r *Requeue) After(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d > 0 && (r.after == 0 || d < r.after) {
		r.after = d
	}
}

// Earliest is the earliest requeue asked for; 0 if none.
func (r *Requeue) Earliest() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.after
}
