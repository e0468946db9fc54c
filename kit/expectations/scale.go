package expectations

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Action is what a Scale expectation waits for the cache to show.
type Action uint8

const (
	// Create: the object should appear (informer add event).
	Create Action = iota
	// Delete: the object should disappear (informer delete event).
	Delete
	numActions
)

func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

func (a Action) index() int {
	if a >= numActions {
		panic(fmt.Sprintf("expectations: invalid %v", a))
	}
	return int(a)
}

// Scale records, per owner key K (usually types.NamespacedName), the names of
// objects the controller is creating or deleting and has not seen the cache
// reflect yet. The zero value is not usable; call NewScale.
//
// Typical use in a workload controller:
//
//	exp.Expect(key, expectations.Create, pod.Name)   // before Create
//	if _, err := pods.Create(...); err != nil {
//		exp.Observe(key, expectations.Create, pod.Name) // nothing was created
//	}
//	// informer: AddFunc → exp.Observe(ownerKey, Create, pod.Name);
//	//           DeleteFunc → exp.Observe(ownerKey, Delete, pod.Name)
//	// sync:
//	if ok, d := exp.Satisfied(key); !ok {
//		queue.AddAfter(key, exp.Timeout()-d) // an event will usually come first
//		return nil
//	} else if d > 0 {
//		logger.Info("Scale expectations timed out", "unsatisfiedFor", d)
//	}
//	// owner deleted: exp.Delete(key)
type Scale[K comparable] struct {
	opts     options
	mu       sync.Mutex
	owners   map[K]*[numActions]names
	timedOut atomic.Uint64
}

// NewScale returns an empty Scale store.
func NewScale[K comparable](opts ...Option) *Scale[K] {
	return &Scale[K]{opts: newOptions(opts), owners: map[K]*[numActions]names{}}
}

// Expect records that the controller is about to create or delete the object
// name on behalf of key. Expecting a name again restarts its timeout.
func (s *Scale[K]) Expect(key K, action Action, name string) {
	i := action.index()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[key]
	if o == nil {
		o = &[numActions]names{}
		s.owners[key] = o
	}
	if o[i] == nil {
		o[i] = names{}
	}
	o[i][name] = s.opts.clock.Now()
}

// Observe settles the expectation for name, if any: call it when the cache
// shows the object added (Create) or deleted (Delete), or when the request
// failed so the change will never be observed.
func (s *Scale[K]) Observe(key K, action Action, name string) {
	i := action.index()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[key]
	if o == nil {
		return
	}
	delete(o[i], name)
	if len(o[i]) == 0 {
		o[i] = nil
	}
	if o[Create] == nil && o[Delete] == nil {
		delete(s.owners, key)
	}
}

// Satisfied reports whether key has no pending expectations, first dropping
// those older than the timeout.
//
// While not satisfied, unsatisfiedFor is the age of the oldest pending
// expectation (the owner is unblocked at the latest after Timeout() −
// unsatisfiedFor). When this call dropped expectations and none remain, it
// returns ok with unsatisfiedFor = the age of the oldest one dropped (≥
// Timeout()): the owner was unblocked by the timeout, not by events — log it.
// Otherwise unsatisfiedFor is 0. Every dropped expectation is counted in
// TimedOut.
func (s *Scale[K]) Satisfied(key K) (ok bool, unsatisfiedFor time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[key]
	if o == nil {
		return true, 0
	}
	now := s.opts.clock.Now()
	cutoff := now.Add(-s.opts.timeout)
	var dropped int
	var oldestDropped, oldest earliest
	for i := range o {
		n, od, live := o[i].expire(cutoff)
		dropped += n
		oldestDropped.merge(od)
		oldest.merge(live)
		if len(o[i]) == 0 {
			o[i] = nil
		}
	}
	s.timedOut.Add(uint64(dropped))
	if oldest.set {
		return false, now.Sub(oldest.t)
	}
	delete(s.owners, key)
	if dropped > 0 {
		return true, now.Sub(oldestDropped.t)
	}
	return true, 0
}

// Pending returns the names still expected for key and action, sorted,
// including any that have outlived the timeout but were not yet dropped by
// Satisfied. For logs.
func (s *Scale[K]) Pending(key K, action Action) []string {
	i := action.index()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[key]
	if o == nil || len(o[i]) == 0 {
		return nil
	}
	out := make([]string, 0, len(o[i]))
	for name := range o[i] {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Delete forgets everything about key (the owner was deleted).
func (s *Scale[K]) Delete(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owners, key)
}

// Timeout is how long an expectation may stay unobserved.
func (s *Scale[K]) Timeout() time.Duration { return s.opts.timeout }

// TimedOut is the number of expectations dropped so far because they outlived
// the timeout, i.e. events the store never saw (a counter for metrics).
func (s *Scale[K]) TimedOut() uint64 { return s.timedOut.Load() }
