package expectations

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Update records, per owner key K, the revision the controller is updating
// pods to (in place) and the pods it updated whose new revision the cache does
// not show yet. The zero value is not usable; call NewUpdate.
//
// Typical use:
//
//	// after a successful in-place update of pod to revision rev:
//	exp.Expect(key, rev, pod.Name)
//	// informer: UpdateFunc → exp.Observe(ownerKey, pod.Name, revisionOf(pod));
//	//           DeleteFunc → exp.Forget(ownerKey, pod.Name)
//	// sync, before the update phase:
//	if ok, _ := exp.Satisfied(key); !ok { return nil } // events requeue
//	// owner deleted: exp.Delete(key)
//
// Only one revision is tracked per key: expecting a different revision than
// the one tracked drops the pods expected for the old one.
type Update[K comparable] struct {
	opts     options
	mu       sync.Mutex
	owners   map[K]*updateEntry
	timedOut atomic.Uint64
}

type updateEntry struct {
	revision string
	pods     names
}

// NewUpdate returns an empty Update store.
func NewUpdate[K comparable](opts ...Option) *Update[K] {
	return &Update[K]{opts: newOptions(opts), owners: map[K]*updateEntry{}}
}

// Expect records that pod of key was updated to revision. A revision other
// than the one tracked for key starts a new set containing only pod. Expecting
// a pod again restarts its timeout.
func (u *Update[K]) Expect(key K, revision, pod string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.owners[key]
	if e == nil || e.revision != revision {
		e = &updateEntry{revision: revision, pods: names{}}
		u.owners[key] = e
	}
	e.pods[pod] = u.opts.clock.Now()
}

// Observe settles the expectation for pod if the cache shows it at the
// expected revision (podRevision); any other revision leaves it pending.
func (u *Update[K]) Observe(key K, pod, podRevision string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e := u.owners[key]; e != nil && e.revision == podRevision {
		u.drop(key, e, pod)
	}
}

// Forget drops the expectation for pod whatever its revision, e.g. because
// the pod was deleted and will never show the expected revision.
func (u *Update[K]) Forget(key K, pod string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e := u.owners[key]; e != nil {
		u.drop(key, e, pod)
	}
}

func (u *Update[K]) drop(key K, e *updateEntry, pod string) {
	delete(e.pods, pod)
	if len(e.pods) == 0 {
		delete(u.owners, key)
	}
}

// Satisfied reports whether key has no pending expectations, first dropping
// those older than the timeout. unsatisfiedFor has the same meaning as for
// Scale.Satisfied: the age of the oldest pending pod while not satisfied; ≥
// Timeout() together with ok when this call unblocked key by dropping timed-out
// expectations (log it); 0 otherwise. Dropped expectations are counted in
// TimedOut.
func (u *Update[K]) Satisfied(key K) (ok bool, unsatisfiedFor time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.owners[key]
	if e == nil {
		return true, 0
	}
	now := u.opts.clock.Now()
	dropped, oldestDropped, oldest := e.pods.expire(now.Add(-u.opts.timeout))
	u.timedOut.Add(uint64(dropped))
	if oldest.set {
		return false, now.Sub(oldest.t)
	}
	delete(u.owners, key)
	if dropped > 0 {
		return true, now.Sub(oldestDropped.t)
	}
	return true, 0
}

// Pending returns the revision tracked for key and its pods still expected,
// sorted, including any that have outlived the timeout but were not yet
// dropped by Satisfied. For logs.
func (u *Update[K]) Pending(key K) (revision string, pods []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e := u.owners[key]
	if e == nil {
		return "", nil
	}
	for pod := range e.pods {
		pods = append(pods, pod)
	}
	slices.Sort(pods)
	return e.revision, pods
}

// Delete forgets everything about key (the owner was deleted).
func (u *Update[K]) Delete(key K) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.owners, key)
}

// Timeout is how long an expectation may stay unobserved.
func (u *Update[K]) Timeout() time.Duration { return u.opts.timeout }

// TimedOut is the number of expectations dropped so far because they outlived
// the timeout (a counter for metrics).
func (u *Update[K]) TimedOut() uint64 { return u.timedOut.Load() }
