// Package app wires the probe-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/probe-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"fmt"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "probe-controller"

// Gates are the feature gates probe-controller accepts in --feature-gates
// (OpenKruise reference §1.x "Gates").
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.PodProbeMarkerGate,
		features.KruiseDaemon,
		features.EnablePodProbeMarkerOnServerless,
		features.PodWebhook,
	}
}

// Binary describes probe-controller to the kit/app shell.
func Binary() kitapp.Binary {
	return kitapp.Binary{Name: Name, Gates: Gates(), Setup: setup}
}

// setup registers the PodProbeMarker reconciler when PodProbeMarkerGate is
// on after the gate rules (it needs KruiseDaemon: a node agent that runs the
// probes, so it is off by default); otherwise the shell idles.
func setup(ctx context.Context, env *kitapp.Env) error {
	if env.Gates == nil || !env.Gates.Enabled(features.PodProbeMarkerGate) {
		return nil
	}
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	c, err := controller.New(cl.Deps(env))
	if err != nil {
		return fmt.Errorf("set up PodProbeMarker reconciler: %w", err)
	}
	env.AddController(c)
	return nil
}
