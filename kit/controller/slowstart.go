package controller

import (
	"errors"
	"sync"
)

// MaxCreatesPerSync bounds the pods one sync of a replicated workload
// creates, as kube-controller-manager bounds a ReplicaSet's (its burst of
// 500): the creations' expectations hold the next sync until the cache shows
// them, so a huge spec.replicas is reached batch by batch, and the work,
// memory and time of one sync stay the same whatever the spec says.
const MaxCreatesPerSync = 500

// SlowStart calls fn(i) for i in [0, n) in batches of 1, 2, 4, …, stopping
// after the first batch in which a call failed, as Kubernetes' controllers
// create pods: a quota or admission error costs one request, not n. Within a
// batch at most inFlight calls run at once (at least 1), so a batch of a
// thousand does not arrive at the API server as a thousand concurrent
// requests (API Priority and Fairness answers a flood beyond its queues with
// 429s, each of which is a wasted request and a retry). It returns how many
// calls were made and their errors joined.
func SlowStart(n, inFlight int, fn func(i int) error) (int, error) {
	done, _, err := SlowStartFrom(n, 1, inFlight, fn)
	return done, err
}

// SlowStartFrom is SlowStart with a first batch of first (at least 1). It
// also returns the size of the last batch that had no failure (0 if the
// first one failed), the batch a later slow start may begin with.
func SlowStartFrom(n, first, inFlight int, fn func(i int) error) (done, reached int, err error) {
	for batch := max(first, 1); done < n; batch *= 2 {
		end := min(done+batch, n)
		idx := make([]int, 0, end-done)
		for i := done; i < end; i++ {
			idx = append(idx, i)
		}
		err := ForEach(idx, inFlight, fn)
		done = end
		if err != nil {
			return done, 0, errors.Join(err)
		}
		reached = batch
	}
	return done, reached, nil
}

// BatchMemory remembers, per object, the batch size its slow starts reached
// without a failure, so that the next one (the next wave of a rolling update,
// the next burst of a large creation) does not climb from 1 again through
// round trips that protect against nothing: its calls have been succeeding.
// A failure sends the object back to 1, which keeps the protection slow start
// exists for (a quota error costs one request). The zero value is ready to
// use; Forget drops a deleted object.
type BatchMemory[K comparable] struct {
	mu   sync.Mutex
	size map[K]int
}

// First is the batch the next slow start of key begins with.
func (m *BatchMemory[K]) First(key K) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.size[key], 1)
}

// Reached records the result of a slow start of key: the size its last
// successful batch reached (0 after a failure).
func (m *BatchMemory[K]) Reached(key K, size int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.size == nil {
		m.size = map[K]int{}
	}
	if size <= 1 {
		delete(m.size, key)
		return
	}
	m.size[key] = size
}

// Forget drops key.
func (m *BatchMemory[K]) Forget(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.size, key)
}
