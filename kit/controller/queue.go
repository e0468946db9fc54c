package controller

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// QueueOptions configures the rate limiters of a Queue. Defaults mirror
// OpenKruise's manager flags (pkg/util/ratelimiter) and the initial-list delay
// of PR #1026.
type QueueOptions struct {
	// BaseDelay and MaxDelay bound the per-item exponential back-off of
	// failed syncs.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// QPS and BucketSize configure the overall token bucket.
	QPS        float64
	BucketSize int

	// InitialDelayBase and InitialDelayMax bound the per-key exponential
	// delay applied to keys enqueued from objects replayed out of an
	// informer's initial list (3s, 6s, 12s, … capped at 30s).
	InitialDelayBase time.Duration
	InitialDelayMax  time.Duration
	// DisableInitialDelay enqueues initial-list keys immediately, like a
	// live event (for benchmarks comparing both behaviours).
	DisableInitialDelay bool
}

// DefaultQueueOptions returns OpenKruise's defaults.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{
		BaseDelay:        5 * time.Millisecond,
		MaxDelay:         1000 * time.Second,
		QPS:              10,
		BucketSize:       100,
		InitialDelayBase: 3 * time.Second,
		InitialDelayMax:  30 * time.Second,
	}
}

// AddFlags binds the options to fs.
func (o *QueueOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.BaseDelay, "rate-limiter-base-delay", o.BaseDelay, "Per-item exponential back-off base delay for failed syncs.")
	fs.DurationVar(&o.MaxDelay, "rate-limiter-max-delay", o.MaxDelay, "Per-item exponential back-off maximum delay for failed syncs.")
	fs.Float64Var(&o.QPS, "rate-limiter-qps", o.QPS, "Overall token-bucket rate of requeues per second.")
	fs.IntVar(&o.BucketSize, "rate-limiter-bucket-size", o.BucketSize, "Overall token-bucket burst size.")
	fs.DurationVar(&o.InitialDelayBase, "initial-list-delay-base", o.InitialDelayBase, "Base of the per-key exponential delay for keys enqueued from an informer's initial list.")
	fs.DurationVar(&o.InitialDelayMax, "initial-list-delay-max", o.InitialDelayMax, "Cap of the per-key exponential delay for keys enqueued from an informer's initial list.")
	fs.BoolVar(&o.DisableInitialDelay, "disable-initial-list-delay", o.DisableInitialDelay, "Enqueue keys from an informer's initial list immediately instead of delaying them.")
}

// Validate reports nonsensical values.
func (o QueueOptions) Validate() error {
	switch {
	case o.BaseDelay <= 0 || o.MaxDelay < o.BaseDelay:
		return fmt.Errorf("rate limiter delays must satisfy 0 < base (%s) <= max (%s)", o.BaseDelay, o.MaxDelay)
	case o.QPS <= 0 || o.BucketSize <= 0:
		return fmt.Errorf("rate limiter qps (%v) and bucket size (%d) must be positive", o.QPS, o.BucketSize)
	case !o.DisableInitialDelay && (o.InitialDelayBase <= 0 || o.InitialDelayMax < o.InitialDelayBase):
		return fmt.Errorf("initial-list delays must satisfy 0 < base (%s) <= max (%s)", o.InitialDelayBase, o.InitialDelayMax)
	}
	return nil
}

// NewRateLimiter returns max(per-item exponential BaseDelay→MaxDelay, token
// bucket QPS/BucketSize).
func NewRateLimiter[T comparable](o QueueOptions) workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](o.BaseDelay, o.MaxDelay),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(o.QPS), o.BucketSize)},
	)
}

// QueueConfig carries the optional collaborators of a Queue.
type QueueConfig struct {
	// MetricsProvider receives the queue's metrics (nil: client-go's global
	// provider, which kit/app sets).
	MetricsProvider workqueue.MetricsProvider
	// Clock drives delays (nil: real clock). Tests inject a fake clock.
	Clock clock.WithTicker
}

// Queue is a named, typed rate-limiting work queue that also knows how to
// delay keys enqueued from an informer's initial list.
type Queue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	name    string
	initial workqueue.TypedRateLimiter[T] // nil when the initial delay is disabled
}

// NewQueue builds a Queue named name (the name labels its metrics).
func NewQueue[T comparable](name string, o QueueOptions, cfg QueueConfig) *Queue[T] {
	qc := workqueue.TypedRateLimitingQueueConfig[T]{
		Name:            name,
		MetricsProvider: cfg.MetricsProvider,
		Clock:           cfg.Clock,
	}
	q := &Queue[T]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(NewRateLimiter[T](o), qc),
		name:                       name,
	}
	if !o.DisableInitialDelay {
		q.initial = workqueue.NewTypedItemExponentialFailureRateLimiter[T](o.InitialDelayBase, o.InitialDelayMax)
	}
	return q
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.name }

// Enqueue adds key for immediate processing, as for a live event. It also
// resets the key's initial-list delay.
func (q *Queue[T]) Enqueue(key T) {
	if q.initial != nil {
		q.initial.Forget(key)
	}
	q.Add(key)
}

// EnqueueInitial adds key after its next initial-list delay (per key: base,
// 2×base, 4×base, … capped). Several delayed adds of one key collapse into
// the earliest one. With the delay disabled it is Enqueue.
func (q *Queue[T]) EnqueueInitial(key T) {
	if q.initial == nil {
		q.Add(key)
		return
	}
	q.AddAfter(key, q.initial.When(key))
}

// EnqueueEvent is EnqueueInitial when isInInitialList, else Enqueue. Use it
// for events of dependent objects (pods of a workload), whose replay at
// start-up would otherwise requeue their owner once per object.
func (q *Queue[T]) EnqueueEvent(key T, isInInitialList bool) {
	if isInInitialList {
		q.EnqueueInitial(key)
		return
	}
	q.Enqueue(key)
}

// ForgetInitial drops key's initial-list delay state.
func (q *Queue[T]) ForgetInitial(key T) {
	if q.initial != nil {
		q.initial.Forget(key)
	}
}
