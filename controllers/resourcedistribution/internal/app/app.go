// Package app wires the resourcedistribution-controller binary. It exists so that
// cmd/resourcedistribution-controller/main.go stays one line and tests can build the Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/resourcedistribution/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "resourcedistribution-controller"

// Gates are the feature gates resourcedistribution-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// Binary describes resourcedistribution-controller to the kit/app shell. It runs the reconciler only with
// ResourceDistributionGate on, as OpenKruise adds its controller only then. The gate keeps OpenKruise's default
// (off) so a --feature-gates value means the same in both; Flotilla's overlay, chart and `make run` pass
// ResourceDistributionGate=true.
func Binary() kitapp.Binary {
	return wiring.Reconcilers(wiring.ReconcilerBinary{
		Name:        Name,
		Gates:       []featuregate.Feature{features.ResourceDistributionGate},
		Off:         wiring.OffUnless(features.ResourceDistributionGate),
		Reconcilers: wiring.Reconciler("ResourceDistribution reconciler", controller.New),
	})
}
