// Package app wires the pub-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/pub-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/pub/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "pub-controller"

// Binary describes pub-controller to the kit/app shell (kit/wiring.Webhook):
// the PUB reconciler on the leader, the guard on every replica. Its feature
// gates (behaviour §1.0, docs/openkruise-behaviour.md) are the two PUB gates,
// InPlacePodVerticalScaling and PodWebhook (EnableExternalCerts comes with
// the shell).
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name: Name,
		Kind: "PodUnavailableBudget",
		Gates: []featuregate.Feature{features.PodUnavailableBudgetDeleteGate, features.PodUnavailableBudgetUpdateGate,
			features.InPlacePodVerticalScaling, features.PodWebhook},
		Off:         off,
		Reconcilers: addReconciler,
		Webhooks:    webhook.Setup,
	})
}

// Gates are the feature gates pub-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// off: as in OpenKruise, with both PUB gates off (PodWebhook=false forces
// them off) neither the reconciler nor the guard runs.
func off(g featuregate.FeatureGate) string {
	if !g.Enabled(features.PodUnavailableBudgetDeleteGate) && !g.Enabled(features.PodUnavailableBudgetUpdateGate) {
		return "PodUnavailableBudgetDeleteGate and PodUnavailableBudgetUpdateGate are off"
	}
	return ""
}

// addReconciler registers the PUB reconciler (leader only), watching the
// workloads PUBs select through.
func addReconciler(env *kitapp.Env, cl *wiring.Clients) error {
	finder, err := workload.New(env.RESTConfig)
	if err != nil {
		return err
	}
	return wiring.AddReconciler(env, "PodUnavailableBudget reconciler", controller.New,
		controller.Deps{Deps: cl.Deps(env), Finder: finder, WatchWorkloads: true})
}
