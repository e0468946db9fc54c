// Package app wires the containerrecreate-controller binary. It exists so that
// cmd/containerrecreate-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/containerrecreate/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "containerrecreate-controller"

// Gates are the feature gates containerrecreate-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// Binary describes containerrecreate-controller to the kit/app shell. It runs the reconciler only with
// KruiseDaemon on, as OpenKruise adds its ContainerRecreateRequest controller only then (a request needs a node
// agent). The gate keeps its default (off); Flotilla's overlay and `make run` pass KruiseDaemon=true.
func Binary() kitapp.Binary {
	return wiring.Reconcilers(wiring.ReconcilerBinary{
		Name:        Name,
		Gates:       []featuregate.Feature{features.KruiseDaemon},
		Off:         wiring.OffUnless(features.KruiseDaemon),
		Reconcilers: wiring.Reconciler("ContainerRecreateRequest reconciler", controller.New),
	})
}
