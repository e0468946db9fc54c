// Package app wires the probe-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/probe-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/probe/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Binary describes probe-controller to the kit/app shell, with the feature
// gates it accepts in --feature-gates (behaviour §1.6 Gates,
// docs/openkruise-behaviour.md).
func Binary() kitapp.Binary {
	gates := []featuregate.Feature{features.PodProbeMarkerGate, features.KruiseDaemon,
		features.EnablePodProbeMarkerOnServerless, features.PodWebhook}
	return kitapp.Binary{Name: "probe-controller", Gates: gates, Setup: setup}
}

// Gates are the feature gates probe-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// setup registers the PodProbeMarker reconciler when PodProbeMarkerGate is
// on after the gate rules (it needs KruiseDaemon: a node agent that runs the
// probes; the overlays that install the agent turn it on). With the gate off
// it registers controller.Disabled instead: each PodProbeMarker gets a
// Warning event saying it is not acted on, rather than silence.
func setup(ctx context.Context, env *kitapp.Env) error {
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	if env.Gates == nil || !env.Gates.Enabled(features.PodProbeMarkerGate) {
		why := disabledWhy(env.Gates)
		return wiring.AddReconciler(env, "the PodProbeMarker refusal",
			func(d wiring.Deps) (*controller.Disabled, error) { return controller.NewDisabled(d, why) }, cl.Deps(env))
	}
	return wiring.AddReconciler(env, "PodProbeMarker reconciler", controller.New, cl.Deps(env))
}

// disabledWhy says which gate keeps PodProbeMarkerGate off.
func disabledWhy(g featuregate.FeatureGate) string {
	if g != nil && !g.Enabled(features.KruiseDaemon) {
		return "because probe-controller runs with KruiseDaemon=false: PodProbeMarkerGate needs a node agent " +
			"(install probe-agent and run probe-controller with --feature-gates=KruiseDaemon=true, as deploy/overlays/probe does)"
	}
	return "because probe-controller runs with PodProbeMarkerGate=false"
}
