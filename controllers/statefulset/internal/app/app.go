// Package app wires the statefulset-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/statefulset-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillascheme "github.com/flotilla-dev/flotilla/client/clientset/versioned/scheme"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/statefulset/internal/controller"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "statefulset-controller"

// Gates are the feature gates statefulset-controller accepts in --feature-gates
// (OpenKruise reference §1.x "Gates").
func Gates() []featuregate.Feature {
	return []featuregate.Feature{
		features.StatefulSetAutoDeletePVC,
		features.StatefulSetStartOrdinal,
		features.PodIndexLabel,
		features.StatefulSetAutoResizePVCGate,
		features.PreDownloadImageForInPlaceUpdate,
		features.PreparingUpdateAsUpdate,
		features.InPlaceUpdateEnvFromMetadata,
		features.InPlaceWorkloadVerticalScaling,
		features.KruiseDaemon,
	}
}

// Binary describes statefulset-controller to the kit/app shell.
func Binary() kitapp.Binary {
	o := &options{expectationTimeout: expectations.DefaultTimeout}
	return kitapp.Binary{Name: Name, Gates: Gates(), AddFlags: o.addFlags, Setup: o.setup}
}

// options are the flags only this binary has.
type options struct {
	expectationTimeout time.Duration
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.expectationTimeout, "expectation-timeout", o.expectationTimeout,
		"How long a pod or claim creation or deletion that never shows up in the cache may block its StatefulSet.")
}

// setup builds the clients and informer factories and registers the
// StatefulSet reconciler.
func (o *options) setup(ctx context.Context, env *kitapp.Env) error {
	if env.RESTConfig == nil {
		return errors.New("statefulset-controller needs a REST config for the Flotilla clientset")
	}
	client, err := versioned.NewForConfig(env.RESTConfig)
	if err != nil {
		return fmt.Errorf("build Flotilla clientset: %w", err)
	}
	var nsOpts []flotillainformers.SharedInformerOption
	if env.Options.Namespace != "" {
		nsOpts = append(nsOpts, flotillainformers.WithNamespace(env.Options.Namespace))
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := flotillascheme.AddToScheme(scheme); err != nil {
		return err
	}
	d := controller.Deps{
		Kube:               env.KubeClient,
		Client:             client,
		KubeInformers:      env.NewKubeInformerFactory(informers.WithTransform(kitcontroller.StripManagedFields)),
		Informers:          flotillainformers.NewSharedInformerFactoryWithOptions(client, env.Options.SyncPeriod, append(nsOpts, flotillainformers.WithTransform(kitcontroller.StripManagedFields))...),
		Namespace:          env.Options.Namespace,
		Gates:              env.Gates,
		Clock:              env.Clock,
		Recorder:           env.EventRecorder(ctx, scheme),
		QueueOptions:       env.Options.Queue,
		QueueConfig:        env.QueueConfig(),
		ExpectationTimeout: o.expectationTimeout,
	}
	env.AddInformerFactory(d.Informers)
	c, err := controller.New(d)
	if err != nil {
		return fmt.Errorf("set up StatefulSet reconciler: %w", err)
	}
	env.AddController(c)
	return nil
}
