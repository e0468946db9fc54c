// Package app wires the containerrecreate-controller binary. It exists so that
// cmd/containerrecreate-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"context"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/containerrecreate/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "containerrecreate-controller"

// Gates are the feature gates containerrecreate-controller accepts in --feature-gates.
func Gates() []featuregate.Feature {
	return []featuregate.Feature{features.KruiseDaemon}
}

// Binary describes containerrecreate-controller to the kit/app shell.
func Binary() kitapp.Binary {
	return kitapp.Binary{Name: Name, Gates: Gates(), Setup: setup}
}

// setup runs the reconciler only with KruiseDaemon on, as OpenKruise adds its ContainerRecreateRequest
// controller only then (a request needs a node agent). The gate keeps its default (off); Flotilla's overlay and
// `make run` pass KruiseDaemon=true.
func setup(ctx context.Context, env *kitapp.Env) error {
	if !env.Gates.Enabled(features.KruiseDaemon) {
		env.Logger.Info("KruiseDaemon is off: nothing to run")
		return nil
	}
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	return wiring.AddReconciler(env, "ContainerRecreateRequest reconciler", controller.New, cl.Deps(env))
}
