// Package app wires the workloadspread-controller binary: the WorkloadSpread
// reconciler on the leader and the pod and WorkloadSpread webhooks on every
// replica. It exists so that cmd/workloadspread-controller/main.go stays one
// line and tests can build the Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/webhook"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "workloadspread-controller"

// Binary describes workloadspread-controller to the kit/app shell. Its
// gates are OpenKruise's WorkloadSpread and PodWebhook (PodWebhook=false
// turns WorkloadSpread off, as in OpenKruise).
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name:        Name,
		Kind:        "WorkloadSpread",
		Gates:       []featuregate.Feature{features.WorkloadSpread, features.PodWebhook},
		Off:         off,
		Reconcilers: wiring.Reconciler("WorkloadSpread reconciler", controller.New),
		Webhooks:    webhook.Setup,
	})
}

// Gates are the feature gates workloadspread-controller accepts.
func Gates() []featuregate.Feature { return Binary().Gates }

func off(g featuregate.FeatureGate) string {
	if !g.Enabled(features.WorkloadSpread) || !g.Enabled(features.PodWebhook) {
		return "WorkloadSpread (or PodWebhook) is off"
	}
	return ""
}
