// Package app wires the cloneset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/cloneset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"

	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "cloneset-controller"

// Gates are the feature gates cloneset-controller accepts in --feature-gates
// (OpenKruise reference §1.x "Gates").
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.CloneSetShortHash,
		features.CloneSetPartitionRollback,
		features.CloneSetEventHandlerOptimization,
		features.PreDownloadImageForInPlaceUpdate,
		features.PreparingUpdateAsUpdate,
		features.InPlaceUpdateEnvFromMetadata,
		features.InPlaceWorkloadVerticalScaling,
		features.RecreatePodWhenChangeVCTInCloneSetGate,
		features.ForceDeleteTimeoutExpectationGate,
		features.PodUnavailableBudgetUpdateGate,
		features.ResourcesDeletionProtection,
		features.TemplateNoDefaults,
		features.KruiseDaemon,
	}
}

// Binary describes cloneset-controller to the kit/app shell.
func Binary() kitapp.Binary {
	return kitapp.Binary{Name: Name, Gates: Gates(), Setup: setup}
}

// setup registers informers and controllers. No reconciler is written yet,
// so it registers nothing and the shell idles after winning the Lease.
func setup(_ context.Context, _ *kitapp.Env) error {
	return nil
}
