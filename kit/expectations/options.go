package expectations

import (
	"time"

	"k8s.io/utils/clock"
)

// DefaultTimeout is how long an unobserved expectation blocks its owner before
// it is dropped; OpenKruise's --expectation-timeout default.
const DefaultTimeout = 5 * time.Minute

// Option configures a Scale, ResourceVersion or Update expectation store.
type Option func(*options)

type options struct {
	clock   clock.PassiveClock
	timeout time.Duration
}

// WithClock sets the clock expectations are timed with (default: the real clock).
func WithClock(c clock.PassiveClock) Option {
	return func(o *options) { o.clock = c }
}

// WithTimeout sets how long an expectation may stay unobserved before it is
// dropped. Values ≤ 0 select DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

func newOptions(opts []Option) options {
	o := options{clock: clock.RealClock{}, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	if o.timeout <= 0 {
		o.timeout = DefaultTimeout
	}
	return o
}

// names maps object names to the time they were expected.
type names map[string]time.Time

// expire drops the entries expected at or before cutoff. It returns how many
// it dropped and the earliest expect times among the dropped and the remaining
// entries.
func (n names) expire(cutoff time.Time) (dropped int, oldestDropped, oldestLive earliest) {
	for name, at := range n {
		if !at.After(cutoff) {
			delete(n, name)
			dropped++
			oldestDropped.add(at)
			continue
		}
		oldestLive.add(at)
	}
	return dropped, oldestDropped, oldestLive
}

// earliest accumulates the earliest of the times added to it.
type earliest struct {
	t   time.Time
	set bool
}

func (e *earliest) add(t time.Time) {
	if !e.set || t.Before(e.t) {
		e.t, e.set = t, true
	}
}

func (e *earliest) merge(o earliest) {
	if o.set {
		e.add(o.t)
	}
}
