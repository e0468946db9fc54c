// Package app wires the persistentpodstate-controller binary: the
// PersistentPodState reconciler on the leader, the pod webhook on every
// replica. It exists so that cmd/persistentpodstate-controller/main.go
// stays one line and tests can build the Binary without a process.
package app

import (
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/webhook"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "persistentpodstate-controller"

// Binary describes persistentpodstate-controller to the kit/app shell. As in
// OpenKruise, PersistentPodState has no feature gate of its own; the shell
// adds EnableExternalCerts.
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name: Name,
		Kind: "PersistentPodState",
		Reconcilers: func(env *kitapp.Env, cl *wiring.Clients) error {
			return wiring.AddReconciler(env, "PersistentPodState reconciler", controller.New, cl.Deps(env))
		},
		Webhooks: func(env *kitapp.Env, cl *wiring.Clients, wh kitwebhook.Options) error {
			return webhook.Setup(env, cl, wh)
		},
	})
}

// Gates are the feature gates persistentpodstate-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }
