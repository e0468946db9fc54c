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

// Binary describes cloneset-controller to the kit/app shell: one CloneSet
// reconciler over the shared clients (kit/wiring.Workload), and the feature
// gates it accepts in --feature-gates (behaviour §1.1 Gates,
// docs/openkruise-behaviour.md).
func Binary() kitapp.Binary {
	gates := []featuregate.Feature{features.CloneSetShortHash, features.CloneSetPartitionRollback,
		features.CloneSetEventHandlerOptimization, features.PreDownloadImageForInPlaceUpdate, features.PreparingUpdateAsUpdate,
		features.InPlaceUpdateEnvFromMetadata, features.InPlaceWorkloadVerticalScaling,
		features.RecreatePodWhenChangeVCTInCloneSetGate, features.ForceDeleteTimeoutExpectationGate,
		features.PodUnavailableBudgetUpdateGate, features.ResourcesDeletionProtection, features.TemplateNoDefaults,
		features.KruiseDaemon}
	return wiring.Workload("cloneset-controller", gates, "CloneSet",
		"How long a pod creation or deletion that never shows up in the cache may block its CloneSet.", controller.New)
}

// Gates are the feature gates cloneset-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }
