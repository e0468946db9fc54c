package controller

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// Reconciler is the core a single-queue reconciler embeds (as
// *Reconciler[T]): its name, its work queue, the worker loop draining that
// queue through its sync, and the informers Run waits for. Embedding it
// gives the reconciler Name and Run, so it satisfies kit/app.Controller
// without writing that trio by hand; the reconciler registers its
// informers with WaitFor and enqueues through Queue.
type Reconciler[T comparable] struct {
	// Queue is the reconciler's work queue: handlers and syncs enqueue here.
	Queue  *Queue[T]
	loop   *Loop[T]
	synced []cache.InformerSynced
}

// NewReconciler builds the queue (name is its metrics name, also the
// "controller" of the logs and what Name returns) and the loop that runs
// sync for each key.
func NewReconciler[T comparable](name string, o QueueOptions, cfg QueueConfig, sync SyncFunc[T]) *Reconciler[T] {
	q := NewQueue[T](name, o, cfg)
	return &Reconciler[T]{Queue: q, loop: NewLoop(name, q, sync)}
}

// WaitFor adds informers Run waits for before the first sync.
func (r *Reconciler[T]) WaitFor(synced ...cache.InformerSynced) {
	r.synced = append(r.synced, synced...)
}

// Name implements kit/app.Controller.
func (r *Reconciler[T]) Name() string { return r.loop.Name() }

// Run waits for the informers given to WaitFor (the shell has normally
// synced them already) and runs workers until ctx is done.
func (r *Reconciler[T]) Run(ctx context.Context, workers int) error {
	return r.loop.RunWhenSynced(ctx, workers, r.synced...)
}
