// Package app wires the uniteddeployment-controller binary. It exists so that cmd/uniteddeployment-controller/main.go
// stays one line and tests can build the Binary without a process.
package app

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/controllers/uniteddeployment/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "uniteddeployment-controller"

// Gates are the feature gates uniteddeployment-controller accepts in --feature-gates: UnitedDeployment has none.
func Gates() []featuregate.Feature { return nil }

// Binary describes uniteddeployment-controller to the kit/app shell.
func Binary() kitapp.Binary {
	timeout := wiring.NewExpectationTimeout("How long a subset workload created or written but not yet seen in the cache holds back its UnitedDeployment.")
	setup := func(ctx context.Context, env *kitapp.Env) error {
		cl, err := wiring.New(ctx, env)
		if err != nil {
			return err
		}
		d := cl.Deps(env)
		d.ExpectationTimeout = timeout.Value
		kinds, err := ServedKinds(ctx, cl.Kube.Discovery())
		if err != nil {
			return err
		}
		sub := controller.NewSubsetInformers(cl.Kube, cl.Client, env.Options.Namespace)
		env.AddInformerFactory(sub.Kube)
		env.AddInformerFactory(sub.Flotilla)
		newReconciler := func(d wiring.Deps) (*controller.Controller, error) { return controller.New(d, sub, kinds) }
		return wiring.AddReconciler(env, "UnitedDeployment reconciler", newReconciler, d)
	}
	return kitapp.Binary{Name: Name, Gates: Gates(), AddFlags: timeout.AddFlags, Setup: setup}
}

// ServedKinds returns the subset kinds the API server serves: Deployment and StatefulSet always, CloneSet and
// Advanced StatefulSet when their CRDs are installed. Watching a kind that is not served would keep the caches
// from ever syncing; a UnitedDeployment of such a kind is reported in its status instead.
func ServedKinds(ctx context.Context, d discovery.DiscoveryInterface) ([]controller.Kind, error) {
	kinds := []controller.Kind{controller.KindDeployment, controller.KindStatefulSet}
	for _, c := range []struct {
		gv, resource string
		kind         controller.Kind
	}{
		{"apps.kruise.io/v1alpha1", "clonesets", controller.KindCloneSet},
		{"apps.kruise.io/v1beta1", "statefulsets", controller.KindAdvancedStatefulSet},
	} {
		list, err := d.ServerResourcesForGroupVersion(c.gv)
		if apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("Subset kind not served: UnitedDeployments of this kind are not reconciled", "kind", c.kind, "groupVersion", c.gv)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discover %s: %w", c.gv, err)
		}
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == c.resource }) {
			kinds = append(kinds, c.kind)
		}
	}
	return kinds, nil
}
