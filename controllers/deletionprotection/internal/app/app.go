// Package app wires the deletionprotection-controller binary: the
// admission webhook deciding delete-protection=Cascading for Namespaces
// and CustomResourceDefinitions, served on every replica. It runs no
// reconciler. It exists so that cmd/deletionprotection-controller/main.go
// stays one line and tests can build the Binary without a process.
package app

import (
	"fmt"

	"k8s.io/client-go/metadata"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/deletionprotection/internal/protect"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "deletionprotection-controller"

// Binary describes deletionprotection-controller to the kit/app shell
// (kit/wiring.Webhook). Its gates are OpenKruise's two deletion-protection
// gates, at OpenKruise's defaults (off); deploy/components/deletionprotection-gates
// turns both on wherever the feature is installed.
func Binary() kitapp.Binary {
	return wiring.Webhook(wiring.WebhookBinary{
		Name:  Name,
		Kind:  "deletion protection",
		Gates: []featuregate.Feature{features.ResourcesDeletionProtection, features.DeletionProtectionForCRDCascadingGate},
		// No reconciler: the lookups are live lists made per request.
		Reconcilers: func(*kitapp.Env, *wiring.Clients) error { return nil },
		Webhooks:    setup,
	})
}

// Gates are the feature gates deletionprotection-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// setup serves the webhook on every replica. With ResourcesDeletionProtection
// off it still serves (and allows every deletion): a stopped server would
// make failurePolicy Fail refuse the labelled deletions instead.
func setup(env *kitapp.Env, cl *wiring.Clients, opts kitwebhook.Options) error {
	if opts.Disabled {
		return nil
	}
	meta, err := metadata.NewForConfig(env.RESTConfig)
	if err != nil {
		return fmt.Errorf("build metadata client: %w", err)
	}
	return kitwebhook.Serve(env, opts, []kitwebhook.ConfigRef{{Kind: kitwebhook.Validating, Name: protect.ConfigName}},
		(&protect.Webhook{Kube: cl.Kube, Metadata: meta, Gates: env.Gates}).Register)
}
