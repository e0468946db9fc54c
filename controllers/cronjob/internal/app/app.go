// Package app wires the cronjob-controller binary: one process runs the AdvancedCronJob and the BroadcastJob
// reconcilers (each can be switched off by flag) over one set of informers. It exists so that
// cmd/cronjob-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"context"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/advancedcronjob"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/broadcastjob"
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
	clockOptions    // the shell's clock in production; see clock.go
}

// Binary describes cronjob-controller to the kit/app shell.
func Binary() kitapp.Binary {
	o := &options{advancedCronJob: true, broadcastJob: true}
	return kitapp.Binary{Name: Name, Gates: Gates(), AddFlags: o.addFlags, Setup: o.setup}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.advancedCronJob, "enable-advancedcronjob", o.advancedCronJob, "Run the AdvancedCronJob reconciler.")
	fs.BoolVar(&o.broadcastJob, "enable-broadcastjob", o.broadcastJob, "Run the BroadcastJob reconciler.")
	o.clockOptions.addFlags(fs)
}

func (o *options) setup(ctx context.Context, env *kitapp.Env) error {
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	d := cl.Deps(env)
	d.Clock = o.clockOptions.wrap(env.Clock)
	if o.advancedCronJob {
		if err := wiring.AddReconciler(env, "AdvancedCronJob reconciler", advancedcronjob.New, d); err != nil {
			return err
		}
	}
	if o.broadcastJob {
		if err := wiring.AddReconciler(env, "BroadcastJob reconciler", broadcastjob.New, d); err != nil {
			return err
		}
	}
	return nil
}
