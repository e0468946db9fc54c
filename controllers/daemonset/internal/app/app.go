// Package app wires the daemonset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/daemonset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"fmt"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "daemonset-controller"

// Gates are the feature gates daemonset-controller accepts in --feature-gates
// (OpenKruise reference §1.x "Gates").
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.PreDownloadImageForDaemonSetUpdate,
		features.DaemonSetPruneIneligibleNodes,
		features.InPlaceUpdateEnvFromMetadata,
		features.KruiseDaemon,
	}
}

// Binary describes daemonset-controller to the kit/app shell.
func Binary() kitapp.Binary {
	o := &options{expectationTimeout: wiring.NewExpectationTimeout(
		"How long a pod creation or deletion that never shows up in the cache may block its DaemonSet (a creation blocks only its node).")}
	return kitapp.Binary{Name: Name, Gates: Gates(), AddFlags: o.expectationTimeout.AddFlags, Setup: o.setup}
}

// options are the flags only this binary has.
type options struct {
	expectationTimeout *wiring.ExpectationTimeout
}

// setup builds the clients and informer factories and registers the
// DaemonSet reconciler.
func (o *options) setup(ctx context.Context, env *kitapp.Env) error {
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	d := cl.Deps(env)
	d.ExpectationTimeout = o.expectationTimeout.Value
	c, err := controller.New(d)
	if err != nil {
		return fmt.Errorf("set up DaemonSet reconciler: %w", err)
	}
	if env.Metrics != nil {
		if err := c.RegisterMetrics(env.Metrics); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	env.AddController(c)
	return nil
}
