//go:build e2eclock

package app

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"
)

// clockOptions of a binary built with the e2eclock tag (test/e2e/cronjob
// builds one so an every-minute schedule runs within seconds, not at the
// wall clock's next minute): --clock-offset shifts the reconcilers' "now".
// Release builds never carry this file.
type clockOptions struct {
	offset time.Duration
}

func (o *clockOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.offset, "clock-offset", 0, "Test builds only: add this duration to the reconcilers' current time.")
}

func (o *clockOptions) wrap(c clock.WithTicker) clock.WithTicker {
	return offsetClock{WithTicker: c, offset: o.offset}
}

// offsetClock is the real clock moved by a fixed offset: Now and Since shift, durations and timers do not.
type offsetClock struct {
	clock.WithTicker
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.WithTicker.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
