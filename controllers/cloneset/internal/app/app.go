// Package app wires the cloneset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/cloneset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/cloneset/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
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

// Binary describes cloneset-controller to the kit/app shell: one CloneSet
// reconciler over the shared clients (kit/wiring.Workload).
func Binary() kitapp.Binary {
	return wiring.Workload(Name, Gates(), "CloneSet",
		"How long a pod creation or deletion that never shows up in the cache may block its CloneSet.", controller.New)
}
