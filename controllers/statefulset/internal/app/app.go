// Package app wires the statefulset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/statefulset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/statefulset/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Binary describes statefulset-controller to the kit/app shell: one StatefulSet
// reconciler over the shared clients (kit/wiring.Workload), and the feature
// gates it accepts in --feature-gates (behaviour §1.2 Gates,
// docs/openkruise-behaviour.md).
func Binary() kitapp.Binary {
	gates := []featuregate.Feature{features.StatefulSetAutoDeletePVC, features.StatefulSetStartOrdinal,
		features.PodIndexLabel, features.StatefulSetAutoResizePVCGate, features.PreDownloadImageForInPlaceUpdate,
		features.PreparingUpdateAsUpdate, features.InPlaceUpdateEnvFromMetadata, features.InPlaceWorkloadVerticalScaling,
		features.KruiseDaemon}
	return wiring.Workload("statefulset-controller", gates, "StatefulSet",
		"How long a pod or claim creation or deletion that never shows up in the cache may block its StatefulSet.", controller.New)
}

// Gates are the feature gates statefulset-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }
