// Package app wires the daemonset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/daemonset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "daemonset-controller"

// CRD is the CustomResourceDefinition whose versions this binary converts:
// DaemonSet's v1alpha1 and v1beta1 differ (apis/apps/conversion), so its CRD
// uses conversion strategy Webhook and daemonset-controller serves it.
const CRD = "daemonsets.apps.kruise.io"

// Binary describes daemonset-controller to the kit/app shell: one DaemonSet
// reconciler over the shared clients (kit/wiring.Workload), the DaemonSet
// CRD's conversion webhook on every replica (the --webhook-* flags), and the
// feature gates it accepts in --feature-gates (behaviour §1.3 Gates,
// docs/openkruise-behaviour.md).
func Binary() kitapp.Binary {
	gates := []featuregate.Feature{features.PreDownloadImageForDaemonSetUpdate, features.DaemonSetPruneIneligibleNodes,
		features.InPlaceUpdateEnvFromMetadata, features.KruiseDaemon}
	b := wiring.Workload(Name, gates, "DaemonSet",
		"How long a pod creation or deletion that never shows up in the cache may block its DaemonSet (a creation blocks only its node).", controller.New)
	wh := kitwebhook.DefaultOptions(Name)
	addFlags, setup := b.AddFlags, b.Setup
	b.AddFlags = func(fs *pflag.FlagSet) {
		addFlags(fs)
		wh.AddFlags(fs)
	}
	b.Setup = func(ctx context.Context, env *kitapp.Env) error {
		if err := setup(ctx, env); err != nil {
			return err
		}
		return ServeConversion(env, wh)
	}
	return b
}

// Gates are the feature gates daemonset-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// ServeConversion registers the conversion webhook (a replica component:
// every replica serves it, leader or not, and keeps the CRD's
// spec.conversion calling this binary's Service with its CA). Nothing with
// --webhook-disable: the CRD is left as it is.
func ServeConversion(env *kitapp.Env, wh kitwebhook.Options) error {
	if wh.Disabled {
		env.Logger.Info("Webhook disabled: DaemonSet conversion is not served; reads and writes at the CRD's non-storage version fail", "crd", CRD)
		return nil
	}
	if env.RESTConfig == nil {
		return fmt.Errorf("the DaemonSet conversion webhook needs a REST config (or --webhook-disable)")
	}
	ext, err := apiextensionsclient.NewForConfig(env.RESTConfig)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	c, err := kitwebhook.New(wh, env.KubeClient, env.Metrics, env.Clock)
	if err != nil {
		return fmt.Errorf("set up DaemonSet conversion webhook: %w", err)
	}
	c.ServeConversion(ext.ApiextensionsV1().CustomResourceDefinitions(), Name, "daemonset-convert", conversion.Convert, CRD)
	env.AddReplicaComponent(c.ReplicaComponent())
	return nil
}
