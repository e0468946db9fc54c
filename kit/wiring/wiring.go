// Package wiring builds what every Flotilla controller binary needs beside the
// Kubernetes clientset kit/app already gives it: the generated Flotilla
// clientset, the scheme events are recorded against, one Kubernetes and one
// Flotilla informer factory (scoped to --namespace, managedFields stripped)
// and the event recorder.
//
// It is the only kit package that imports the generated client (module
// github.com/flotilla-dev/flotilla/client): the rest of kit, kit/app
// included, stays free of it so that it builds without the client and never
// ties the shell to one API version. A test in this package enforces that.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillascheme "github.com/flotilla-dev/flotilla/client/clientset/versioned/scheme"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// Clients are a binary's clients, informer factories and event recorder. The
// factories are registered with the Env: the shell starts them once this
// replica leads, and only the informers requested from them during Setup.
type Clients struct {
	Kube   kubernetes.Interface
	Client versioned.Interface
	// Scheme knows the client-go and Flotilla types (the recorder's scheme).
	Scheme        *runtime.Scheme
	KubeInformers informers.SharedInformerFactory
	Informers     flotillainformers.SharedInformerFactory
	Recorder      record.EventRecorderLogger
}

// New builds the Clients of env's binary. Call it from Setup.
func New(ctx context.Context, env *kitapp.Env) (*Clients, error) {
	if env.RESTConfig == nil {
		return nil, fmt.Errorf("%s needs a REST config for the Flotilla clientset", env.Name)
	}
	client, err := versioned.NewForConfig(env.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("build Flotilla clientset: %w", err)
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	opts := informerOptions(env)
	c := &Clients{
		Kube:          env.KubeClient,
		Client:        client,
		Scheme:        scheme,
		KubeInformers: env.NewKubeInformerFactory(informers.WithTransform(controller.StripManagedFields)),
		Informers:     flotillainformers.NewSharedInformerFactoryWithOptions(client, env.Options.SyncPeriod, opts...),
		Recorder:      env.EventRecorder(ctx, scheme),
	}
	env.AddInformerFactory(c.Informers)
	return c, nil
}

// informerOptions are the options of every Flotilla informer factory of
// env's binary: managedFields stripped (never read by a controller, a
// large share of each cached object's memory), limited to --namespace.
func informerOptions(env *kitapp.Env) []flotillainformers.SharedInformerOption {
	opts := []flotillainformers.SharedInformerOption{flotillainformers.WithTransform(controller.StripManagedFields)}
	if env.Options.Namespace != "" {
		opts = append(opts, flotillainformers.WithNamespace(env.Options.Namespace))
	}
	return opts
}

// ReplicaInformers returns a new Flotilla informer factory for what every
// replica reads, not only the leader (a webhook's caches), built like
// Informers (no resync) and started on every replica.
func (c *Clients) ReplicaInformers(env *kitapp.Env) flotillainformers.SharedInformerFactory {
	f := flotillainformers.NewSharedInformerFactoryWithOptions(c.Client, 0, informerOptions(env)...)
	env.AddReplicaInformerFactory(f)
	return f
}

// NewScheme returns a scheme with the client-go and Flotilla types.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), flotillascheme.AddToScheme(scheme)); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	return scheme, nil
}

// Deps are what a reconciler is built from: the clients, the informer
// factories it requests its informers from (before they start: the shell
// starts them once this replica leads, tests start them themselves), the
// flags every binary has and the feature gates. Each controller package
// names it its own Deps, so tests build one field by field.
type Deps struct {
	Kube          kubernetes.Interface
	Client        versioned.Interface
	KubeInformers informers.SharedInformerFactory
	Informers     flotillainformers.SharedInformerFactory
	// Namespace restricts the informers a reconciler builds itself (filtered
	// pod or PVC informers); empty means all namespaces.
	Namespace    string
	Gates        featuregate.FeatureGate
	Clock        clock.WithTicker
	Recorder     record.EventRecorder
	QueueOptions controller.QueueOptions
	QueueConfig  controller.QueueConfig
	// ExpectationTimeout bounds how long a create or delete that never shows
	// up in the cache may block its workload (0: expectations.DefaultTimeout).
	ExpectationTimeout time.Duration
	// PodControl writes pods (nil: kit/podcontrol over Kube); a sync fixture
	// test passes podcontrol's Fake.
	PodControl podcontrol.PodControl
}

// Deps returns the Deps of env's reconcilers, built on these clients.
func (c *Clients) Deps(env *kitapp.Env) Deps {
	return Deps{
		Kube:          c.Kube,
		Client:        c.Client,
		KubeInformers: c.KubeInformers,
		Informers:     c.Informers,
		Namespace:     env.Options.Namespace,
		Gates:         env.Gates,
		Clock:         env.Clock,
		Recorder:      c.Recorder,
		QueueOptions:  env.Options.Queue,
		QueueConfig:   env.QueueConfig(),
	}
}

// Require returns an error, naming the reconciler, unless both clientsets,
// both informer factories and the event recorder are set: what a
// reconciler built from Deps cannot run without.
func (d Deps) Require(reconciler string) error {
	if d.Client == nil || d.Kube == nil || d.Informers == nil || d.KubeInformers == nil || d.Recorder == nil {
		return fmt.Errorf("%s: clients, informer factories and an event recorder are required", reconciler)
	}
	return nil
}

// PassiveClock is d.Clock, or the real clock when none is set (a test
// building Deps by hand).
func (d Deps) PassiveClock() clock.PassiveClock {
	if d.Clock == nil {
		return clock.RealClock{}
	}
	return d.Clock
}

// ResourceVersionExpectations returns an empty store of the resourceVersions
// of a reconciler's own writes, on d.Clock (the real clock when none is set).
func (d Deps) ResourceVersionExpectations() *expectations.ResourceVersion {
	return expectations.NewResourceVersion(expectations.WithClock(d.PassiveClock()))
}

// ExpectationTimeout is the --expectation-timeout flag the workload binaries
// share; Value goes into Deps.ExpectationTimeout.
type ExpectationTimeout struct {
	Value time.Duration
	help  string
}

// NewExpectationTimeout returns the flag at expectations.DefaultTimeout, with
// help naming what a lost event blocks in this binary.
func NewExpectationTimeout(help string) *ExpectationTimeout {
	return &ExpectationTimeout{Value: expectations.DefaultTimeout, help: help}
}

// AddFlags registers the flag (a kitapp.Binary's AddFlags).
func (e *ExpectationTimeout) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&e.Value, "expectation-timeout", e.Value, e.help)
}
