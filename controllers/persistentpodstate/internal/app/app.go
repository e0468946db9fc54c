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
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "persistentpodstate-controller"

// Binary describes persistentpodstate-controller to the kit/app shell. As in
// OpenKruise, PersistentPodState has no feature gate of its own; the shell
// adds EnableExternalCerts.
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name:        Name,
		Kind:        "PersistentPodState",
		Reconcilers: wiring.Reconciler("PersistentPodState reconciler", controller.New),
		Webhooks:    webhook.Setup,
	})
}

// Gates are the feature gates persistentpodstate-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }
