package expectations

import (
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ResourceVersion records, per object UID, the resourceVersion of the
// controller's latest write to that object, until the cache shows that version
// (or a later one). The zero value is not usable; call NewResourceVersion.
//
// Typical use:
//
//	updated, err := pods.Update(ctx, pod, ...)
//	if err == nil { exp.Expect(updated) }
//	// informer: Add/UpdateFunc → exp.Observe(obj); DeleteFunc → exp.Delete(uid)
//	// sync, for every cached object it is about to act on:
//	if ok, wait := exp.Satisfied(cachedPod); !ok {
//		queue.AddAfter(key, wait)
//		return nil
//	}
//
// Versions are compared as unsigned integers when both parse as such (etcd's
// are), otherwise only equality counts as caught up: the API treats
// resourceVersion as opaque, so with a non-numeric version a later write by
// someone else leaves the expectation pending until it times out.
type ResourceVersion struct {
	opts     options
	mu       sync.Mutex
	objs     map[types.UID]rvEntry
	timedOut atomic.Uint64
}

type rvEntry struct {
	rv string
	at time.Time
}

// NewResourceVersion returns an empty ResourceVersion store.
func NewResourceVersion(opts ...Option) *ResourceVersion {
	return &ResourceVersion{opts: newOptions(opts), objs: map[types.UID]rvEntry{}}
}

// Expect records obj's UID and resourceVersion, as returned by a write. If a
// later version is already expected (writes answered out of order), that one
// is kept; either way the timeout restarts. Objects without a UID or
// resourceVersion are ignored.
func (r *ResourceVersion) Expect(obj metav1.Object) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if uid == "" || rv == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.objs[uid]; ok && rvAtLeast(old.rv, rv) {
		rv = old.rv
	}
	r.objs[uid] = rvEntry{rv: rv, at: r.opts.clock.Now()}
}

// Observe drops the expectation for obj's UID if obj, as seen in the cache, is
// at or past the expected resourceVersion.
func (r *ResourceVersion) Observe(obj metav1.Object) {
	uid := obj.GetUID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.objs[uid]; ok && rvAtLeast(obj.GetResourceVersion(), e.rv) {
		delete(r.objs, uid)
	}
}

// Satisfied reports whether obj, a cached copy, may be acted on: nothing is
// expected for its UID, or it is at or past the expected resourceVersion (the
// expectation is then dropped, as by Observe), or the expectation outlived the
// timeout (dropped and counted in TimedOut). Otherwise wait is the time left
// until the expectation times out; requeue after it (an informer event will
// usually requeue sooner).
func (r *ResourceVersion) Satisfied(obj metav1.Object) (ok bool, wait time.Duration) {
	uid := obj.GetUID()
	r.mu.Lock()
	defer r.mu.Unlock()
	e, found := r.objs[uid]
	if !found {
		return true, 0
	}
	if rvAtLeast(obj.GetResourceVersion(), e.rv) {
		delete(r.objs, uid)
		return true, 0
	}
	left := r.opts.timeout - r.opts.clock.Since(e.at)
	if left <= 0 {
		delete(r.objs, uid)
		r.timedOut.Add(1)
		return true, 0
	}
	return false, left
}

// Delete forgets the expectation for uid (the object was deleted).
func (r *ResourceVersion) Delete(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.objs, uid)
}

// Timeout is how long an expectation may stay unobserved.
func (r *ResourceVersion) Timeout() time.Duration { return r.opts.timeout }

// TimedOut is the number of expectations dropped so far because they outlived
// the timeout (a counter for metrics).
func (r *ResourceVersion) TimedOut() uint64 { return r.timedOut.Load() }

// rvAtLeast reports whether resourceVersion have is want or later: numerically
// when both are unsigned integers, by equality otherwise.
func rvAtLeast(have, want string) bool {
	if have == want {
		return true
	}
	h, err1 := strconv.ParseUint(have, 10, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	return err1 == nil && err2 == nil && h >= w
}

// Wait returns how long to wait before acting on objs (typically from an
// informer cache): 0 when the cache shows every write the controller made to
// them, else the shortest time until one of the pending expectations times
// out (at least a millisecond) — their update events normally come sooner.
func (r *ResourceVersion) Wait(objs ...metav1.Object) time.Duration {
	var wait time.Duration
	for _, o := range objs {
		if ok, d := r.Satisfied(o); !ok && (wait == 0 || d < wait) {
			wait = max(d, time.Millisecond)
		}
	}
	return wait
}

// WaitAll is Wait over objs and every item of more (a workload and its
// revision, then its pods: slices.Values or maps.Values of them).
func WaitAll[T metav1.Object](r *ResourceVersion, more iter.Seq[T], objs ...metav1.Object) time.Duration {
	all := append([]metav1.Object(nil), objs...)
	for o := range more {
		all = append(all, o)
	}
	return r.Wait(all...)
}
