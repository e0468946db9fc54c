// Package app wires the daemonset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/daemonset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
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

// Binary describes daemonset-controller to the kit/app shell: one DaemonSet
// reconciler over the shared clients (kit/wiring.Workload).
func Binary() kitapp.Binary {
	return wiring.Workload(Name, Gates(), "DaemonSet",
		"How long a pod creation or deletion that never shows up in the cache may block its DaemonSet (a creation blocks only its node).", controller.New)
}
