// Package app wires the launchpriority-controller binary: the barrier reconciler on the leader and the
// mutating pod webhook on every replica. It exists so that cmd/launchpriority-controller/main.go stays one line
// and tests can build the Binary without a process.
package app

import (
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/webhook"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "launchpriority-controller"

// Binary describes launchpriority-controller to the kit/app shell (kit/wiring.Webhook). OpenKruise has no
// feature gate of its own for container launch priority (it comes with its pod webhook): none here either.
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name:        Name,
		Kind:        "container launch priority",
		Reconcilers: wiring.Reconciler("launch-priority reconciler", controller.New),
		Webhooks:    setupWebhook,
	})
}

// setupWebhook serves the pod webhook on every replica and keeps the caBundle of its configuration.
func setupWebhook(env *kitapp.Env, _ *wiring.Clients, opts kitwebhook.Options) error {
	if opts.Disabled {
		return nil
	}
	return kitwebhook.Serve(env, opts, []kitwebhook.ConfigRef{{Kind: kitwebhook.Mutating, Name: webhook.ConfigName}}, webhook.Register)
}
