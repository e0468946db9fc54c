package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SyncFunc reconciles one key. An error is retried with rate-limited
// back-off, unless it is Permanent (report it first: a Warning event, a
// condition), which is logged and forgotten like nil; an error joining
// permanent and other errors is retried. A nil return forgets the key's
// failure history.
type SyncFunc[T comparable] func(ctx context.Context, key T) error

// ErrPanic wraps a panic recovered from a SyncFunc.
var ErrPanic = errors.New("panic in sync")

// Loop runs workers that drain a Queue through a SyncFunc. It satisfies
// kit/app.Controller.
type Loop[T comparable] struct {
	name  string
	queue *Queue[T]
	sync  SyncFunc[T]
}

// NewLoop builds a Loop. name appears in logs as "controller".
func NewLoop[T comparable](name string, q *Queue[T], sync SyncFunc[T]) *Loop[T] {
	return &Loop[T]{name: name, queue: q, sync: sync}
}

// Name returns the loop's name.
func (l *Loop[T]) Name() string { return l.name }

// Queue returns the loop's queue.
func (l *Loop[T]) Queue() *Queue[T] { return l.queue }

// Run starts workers goroutines and blocks until ctx is done; it then shuts
// the queue down, waits for in-flight syncs to return and returns nil.
// The logger comes from ctx (klog.FromContext).
func (l *Loop[T]) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		return fmt.Errorf("controller %s: workers must be >= 1, got %d", l.name, workers)
	}
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	ctx = klog.NewContext(ctx, logger)
	defer utilruntime.HandleCrashWithContext(ctx)

	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Go(func() {
			for l.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	l.queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
	return nil
}

// processNext handles one key; it returns false once the queue is shut down.
func (l *Loop[T]) processNext(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	if ctx.Err() != nil {
		// Shutting down: leave whatever is still queued.
		return false
	}

	logger := klog.FromContext(ctx).WithValues("key", key)
	err := l.safeSync(klog.NewContext(ctx, logger), key)
	switch {
	case err == nil:
		l.queue.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the error is most likely the cancellation itself.
		logger.V(4).Info("Sync interrupted by shutdown", "err", err)
	case IsPermanent(err):
		// Reported to the user by the sync (event, condition); a retry would
		// fail the same way. A change to the object enqueues it again.
		logger.Info("Sync stopped on a permanent error; not retrying", "err", err)
		l.queue.Forget(key)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed, requeuing", "key", key, "controller", l.name, "requeues", l.queue.NumRequeues(key))
		l.queue.AddRateLimited(key)
	}
	return true
}

func (l *Loop[T]) safeSync(ctx context.Context, key T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
			utilruntime.HandleErrorWithContext(ctx, err, "Recovered from panic in sync", "key", key, "controller", l.name, "stack", string(debug.Stack()))
		}
	}()
	return l.sync(ctx, key)
}

// RunWhenSynced waits until every synced reports true (the informers are
// started by the shell or a test), then runs the loop's workers until ctx
// ends. A ctx cancelled while waiting is a normal shutdown, not an error.
func (l *Loop[T]) RunWhenSynced(ctx context.Context, workers int, synced ...cache.InformerSynced) error {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("controller %s: informer caches did not sync", l.name)
	}
	return l.Run(ctx, workers)
}
