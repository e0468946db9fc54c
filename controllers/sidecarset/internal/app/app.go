// Package app wires the sidecarset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/sidecarset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"os"

	"k8s.io/component-base/featuregate"

	"github.com/spf13/pflag"

	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/controller"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "sidecarset-controller"

// Options are sidecarset-controller's own flags.
type Options struct {
	Webhook kitwebhook.Options
	// RevisionNamespace is --revision-namespace; empty means
	// $POD_NAMESPACE, else flotilla-system (see RevisionNamespace).
	RevisionNamespace string
}

// ConversionServiceName is the Service the SidecarSet CRD's conversion
// stanza names (deploy/components/sidecarset/webhook.yaml): one of its own,
// publishing not-ready addresses, because a replica's readiness waits on its
// SidecarSet informer, whose v1alpha1 list needs conversion; behind the
// admission Service (Ready endpoints only) an install where SidecarSets
// exist would never become ready (issue 23).
const ConversionServiceName = Name + "-conversion"

// NewOptions returns the defaults.
func NewOptions() *Options {
	o := &Options{Webhook: kitwebhook.DefaultOptions(Name)}
	o.Webhook.ConversionServiceName = ConversionServiceName
	return o
}

// AddFlags registers the webhook flags and --revision-namespace.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Webhook.AddFlags(fs)
	o.addFlags(fs)
}

// addFlags registers --revision-namespace (the shell registers --webhook-*).
func (o *Options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RevisionNamespace, "revision-namespace", o.RevisionNamespace,
		"Namespace of the SidecarSet ControllerRevisions and of the kruise-configuration ConfigMap (patchPodMetadata whitelist), read by the reconciler and the pod webhook (default: $POD_NAMESPACE, else flotilla-system). kruise-system takes over the revisions and whitelist OpenKruise left there; the RBAC must grant that namespace (see the README).")
}

// Binary describes sidecarset-controller to the kit/app shell
// (kit/wiring.Webhook): the SidecarSet reconciler on the leader, the
// admission webhooks on every replica (PodWebhook=false turns pod injection
// off, as in OpenKruise, and keeps SidecarSet validation). Its feature gates
// (behaviour §1.4 Gates, docs/openkruise-behaviour.md): EnableExternalCerts
// comes with the shell.
func Binary() kitapp.Binary {
	o := NewOptions()
	return wiring.Webhook(wiring.WebhookBinary{
		Name: Name,
		Kind: "SidecarSet",
		Gates: []featuregate.Feature{features.PodWebhook, features.SidecarSetPatchPodMetadataDefaultsAllowed,
			features.EnableSortSidecarContainerByName, features.SidecarTerminator, features.KruiseDaemon},
		Webhook:     &o.Webhook,
		AddFlags:    o.addFlags,
		Reconcilers: func(env *kitapp.Env, cl *wiring.Clients) error { return addReconciler(env, cl, o.Namespace()) },
		Webhooks:    o.addWebhooks,
	})
}

// Gates are the feature gates sidecarset-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// addWebhooks registers the SidecarSet and pod webhooks (every replica).
func (o *Options) addWebhooks(env *kitapp.Env, cl *wiring.Clients, wh kitwebhook.Options) error {
	pods := env.Gates.Enabled(features.PodWebhook)
	if !pods {
		env.Logger.Info("PodWebhook is off: no sidecar injection (the pod webhook's scope stays false); SidecarSets are still validated")
	}
	ns := o.Namespace()
	env.Logger.Info("SidecarSet revisions and kruise-configuration", "namespace", ns)
	return webhook.Setup(env, cl, wh, ns, pods)
}

// addReconciler registers the SidecarSet reconciler (leader only). Its
// ControllerRevisions and the kruise-configuration ConfigMap live in ns.
func addReconciler(env *kitapp.Env, cl *wiring.Clients, ns string) error {
	return wiring.AddReconciler(env, "SidecarSet reconciler", controller.New,
		controller.Deps{Deps: cl.Deps(env), SystemNamespace: ns})
}

// Namespace is where SidecarSet ControllerRevisions and the
// kruise-configuration ConfigMap (patchPodMetadata whitelist) live, for the
// reconciler and the webhook alike: --revision-namespace, else the
// controller's own namespace ($POD_NAMESPACE, else flotilla-system, as
// OpenKruise's kruise-system). Taking over from OpenKruise sets it to
// kruise-system, where OpenKruise left both. Not the Lease's namespace:
// --leader-elect-resource-namespace moves the Lease (tests put it in their
// own namespace), not where the RBAC grants revisions.
func (o *Options) Namespace() string {
	if o.RevisionNamespace != "" {
		return o.RevisionNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return kitapp.DefaultLeaseNamespace
}
