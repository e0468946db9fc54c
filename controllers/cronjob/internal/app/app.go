// Package app wires the cronjob-controller binary: one process runs the AdvancedCronJob and the BroadcastJob
// reconcilers (each can be switched off by flag) over one set of informers. It exists so that
// cmd/cronjob-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/advancedcronjob"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/broadcastjob"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/deps"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "cronjob-controller"

// Gates are the feature gates cronjob-controller accepts in --feature-gates: AdvancedCronJob has none.
func Gates() []featuregate.Feature { return nil }

// options are the flags only this binary has.
type options struct {
	advancedCronJob bool
	broadcastJob    bool
	// clockOffset shifts the reconcilers' notion of "now"; end-to-end tests use it to reach the next
	// scheduled minute without waiting for it. Never set it in production.
	clockOffset time.Duration
}

// Binary describes cronjob-controller to the kit/app shell.
func Binary() kitapp.Binary {
	o := &options{advancedCronJob: true, broadcastJob: true}
	return kitapp.Binary{Name: Name, Gates: Gates(), AddFlags: o.addFlags, Setup: o.setup}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.advancedCronJob, "enable-advancedcronjob", o.advancedCronJob, "Run the AdvancedCronJob reconciler.")
	fs.BoolVar(&o.broadcastJob, "enable-broadcastjob", o.broadcastJob, "Run the BroadcastJob reconciler.")
	fs.DurationVar(&o.clockOffset, "clock-offset", 0, "Testing only: add this duration to the reconcilers' current time.")
	_ = fs.MarkHidden("clock-offset")
}

func (o *options) setup(ctx context.Context, env *kitapp.Env) error {
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	d := deps.Deps{
		Kube:          cl.Kube,
		Client:        cl.Client,
		KubeInformers: cl.KubeInformers,
		Informers:     cl.Informers,
		Namespace:     env.Options.Namespace,
		Clock:         offsetClock{WithTicker: env.Clock, offset: o.clockOffset},
		Recorder:      cl.Recorder,
		QueueOptions:  env.Options.Queue,
		QueueConfig:   env.QueueConfig(),
	}
	if o.advancedCronJob {
		c, err := advancedcronjob.New(d)
		if err != nil {
			return fmt.Errorf("set up AdvancedCronJob reconciler: %w", err)
		}
		env.AddController(c)
	}
	if o.broadcastJob {
		c, err := broadcastjob.New(d)
		if err != nil {
			return fmt.Errorf("set up BroadcastJob reconciler: %w", err)
		}
		env.AddController(c)
	}
	return nil
}

// offsetClock is the real clock moved by a fixed offset: Now and Since shift, durations and timers do not.
type offsetClock struct {
	clock.WithTicker
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.WithTicker.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
