// Package app wires the sidecarset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/sidecarset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"fmt"
	"os"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "sidecarset-controller"

// Gates are the feature gates sidecarset-controller accepts in --feature-gates
// (OpenKruise reference §1.x "Gates").
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.PodWebhook,
		features.SidecarSetPatchPodMetadataDefaultsAllowed,
		features.EnableSortSidecarContainerByName,
		features.SidecarTerminator,
		features.KruiseDaemon,
		features.EnableExternalCerts,
	}
}

// Binary describes sidecarset-controller to the kit/app shell.
func Binary() kitapp.Binary {
	wh := kitwebhook.DefaultOptions(Name)
	return kitapp.Binary{
		Name:     Name,
		Gates:    Gates(),
		AddFlags: wh.AddFlags,
		Setup:    func(ctx context.Context, env *kitapp.Env) error { return setup(ctx, env, wh) },
	}
}

// setup builds the clients and registers the SidecarSet reconciler (leader
// only) and the admission webhooks (every replica; PodWebhook=false turns pod
// injection off, as in OpenKruise, and keeps SidecarSet validation).
func setup(ctx context.Context, env *kitapp.Env, wh kitwebhook.Options) error {
	cl, err := wiring.New(ctx, env)
	if err != nil {
		return err
	}
	if err := addReconciler(env, cl); err != nil {
		return err
	}
	pods := env.Gates.Enabled(features.PodWebhook)
	if !pods {
		env.Logger.Info("PodWebhook is off: no sidecar injection (the pod webhook's scope stays false); SidecarSets are still validated")
	}
	if env.Gates.Enabled(features.EnableExternalCerts) && wh.CertDir == "" {
		return fmt.Errorf("EnableExternalCerts needs --webhook-cert-dir")
	}
	if err := webhook.Setup(env, cl, wh, SystemNamespace(env), pods); err != nil {
		return fmt.Errorf("set up SidecarSet webhook: %w", err)
	}
	return nil
}

// addReconciler registers the SidecarSet reconciler (leader only). Its
// ControllerRevisions and the kruise-configuration ConfigMap live in the
// controller's own namespace (SystemNamespace).
func addReconciler(env *kitapp.Env, cl *wiring.Clients) error {
	c, err := controller.New(controller.Deps{
		Kube:            cl.Kube,
		Client:          cl.Client,
		KubeInformers:   cl.KubeInformers,
		Informers:       cl.Informers,
		Namespace:       env.Options.Namespace,
		SystemNamespace: SystemNamespace(env),
		Gates:           env.Gates,
		Clock:           env.Clock,
		Recorder:        cl.Recorder,
		QueueOptions:    env.Options.Queue,
		QueueConfig:     env.QueueConfig(),
	})
	if err != nil {
		return fmt.Errorf("set up SidecarSet reconciler: %w", err)
	}
	env.AddController(c)
	return nil
}

// SystemNamespace is where SidecarSet ControllerRevisions and the
// kruise-configuration ConfigMap (patchPodMetadata whitelist) live: the
// controller's own namespace ($POD_NAMESPACE, else flotilla-system, as
// OpenKruise's kruise-system), which the webhook reads too. Not the Lease's
// namespace: --leader-elect-resource-namespace moves the Lease (tests put it
// in their own namespace), not where the RBAC grants revisions.
func SystemNamespace(*kitapp.Env) string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return kitapp.DefaultLeaseNamespace
}
