// Package app wires the resourcedistribution-controller binary. It exists so that
// cmd/resourcedistribution-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"context"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "resourcedistribution-controller"

// Gates are the feature gates resourcedistribution-controller accepts in --feature-gates.
func Gates() []featuregate.Feature {
	return []featuregate.Feature{features.ResourceDistributionGate}
}

// Binary describes resourcedistribution-controller to the kit/app shell.
func Binary() kitapp.Binary {
	return kitapp.Binary{Name: Name, Gates: Gates(), Setup: setup}
}

// setup runs the reconciler only with ResourceDistributionGate on, as OpenKruise adds its controller only then.
// The gate keeps OpenKruise's default (off) so a --feature-gates value means the same in both; Flotilla's
// overlay, chart and `make run` pass ResourceDistributionGate=true.
func setup(ctx context.Context, env *kitapp.Env) error {
	if !env.Gates.Enabled(features.ResourceDistributionGate) {
		env.Logger.Info("ResourceDistributionGate is off: nothing to run")
		return nil
	}
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	return wiring.AddReconciler(env, "ResourceDistribution reconciler", controller.New, cl.Deps(env))
}
