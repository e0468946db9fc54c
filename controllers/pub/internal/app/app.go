// Package app wires the pub-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/pub-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"fmt"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/pub/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "pub-controller"

// Gates are the feature gates pub-controller accepts in --feature-gates
// (OpenKruise reference §1.0).
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.PodUnavailableBudgetDeleteGate,
		features.PodUnavailableBudgetUpdateGate,
		features.InPlacePodVerticalScaling,
		features.PodWebhook,
		features.EnableExternalCerts,
	}
}

// Binary describes pub-controller to the kit/app shell.
func Binary() kitapp.Binary {
	wh := kitwebhook.DefaultOptions(Name)
	return kitapp.Binary{
		Name:     Name,
		Gates:    Gates(),
		AddFlags: wh.AddFlags,
		Setup:    func(ctx context.Context, env *kitapp.Env) error { return setup(ctx, env, wh) },
	}
}

// setup registers the PUB reconciler (leader only) and the guard (every
// replica). As in OpenKruise, with both PUB gates off (PodWebhook=false
// forces them off) neither runs.
func setup(ctx context.Context, env *kitapp.Env, wh kitwebhook.Options) error {
	if !env.Gates.Enabled(features.PodUnavailableBudgetDeleteGate) && !env.Gates.Enabled(features.PodUnavailableBudgetUpdateGate) {
		env.Logger.Info("PodUnavailableBudgetDeleteGate and PodUnavailableBudgetUpdateGate are off: nothing to run")
		return nil
	}
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	finder, err := workload.New(env.RESTConfig)
	if err != nil {
		return err
	}
	c, err := controller.New(controller.Deps{Deps: cl.Deps(env), Finder: finder, WatchWorkloads: true})
	if err != nil {
		return fmt.Errorf("set up PodUnavailableBudget reconciler: %w", err)
	}
	env.AddController(c)
	if env.Gates.Enabled(features.EnableExternalCerts) && wh.CertDir == "" {
		return fmt.Errorf("EnableExternalCerts needs --webhook-cert-dir")
	}
	if err := webhook.Setup(env, cl, wh); err != nil {
		return fmt.Errorf("set up PodUnavailableBudget webhook: %w", err)
	}
	return nil
}
