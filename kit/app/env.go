package app

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Controller is what a binary runs once it leads: Run blocks until ctx is
// done, running workers concurrent syncs, and returns nil on a clean
// shutdown. kit/controller.Loop implements it.
type Controller interface {
	Name() string
	Run(ctx context.Context, workers int) error
}

// InformerFactory is satisfied by client-go's SharedInformerFactory and by
// the factories informer-gen generates for Flotilla's clientset, without
// kit importing either.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// Source is anything else that must run and sync before controllers start:
// Start is called in a goroutine once the Lease is won and should return
// when ctx is done; HasSynced gates /readyz and the controllers' start.
type Source struct {
	Name      string
	Start     func(ctx context.Context)
	HasSynced func() bool
}

// Env is what a binary's Setup receives: configuration, clients and
// registration points. Setup runs before leader election; nothing
// registered here starts until this replica leads.
type Env struct {
	// Name is the binary's name (also its user agent and default Lease).
	Name string
	// Options are the parsed shared flags. Read-only.
	Options Options
	// Gates holds only the gates the binary registered.
	Gates featuregate.FeatureGate
	// Logger is the root logger (also in Setup's ctx).
	Logger logr.Logger
	// Clock is the real clock in production; inject it into controllers.
	Clock clock.WithTicker
	// RESTConfig is nil when the shell was given a ready client (tests).
	// Use it to build the generated Flotilla clientset.
	RESTConfig *rest.Config
	// KubeClient is the Kubernetes clientset.
	KubeClient kubernetes.Interface
	// Metrics is where controllers register their own collectors.
	Metrics prometheus.Registerer
	// Identity is this replica's leader-election identity.
	Identity string

	queueMetrics *Metrics

	mu          sync.Mutex
	factories   []InformerFactory
	sources     []Source
	controllers []Controller
	broadcaster record.EventBroadcaster
}

// QueueConfig returns the queue collaborators (metrics provider, clock) to
// pass to controller.NewQueue together with Options.Queue.
func (e *Env) QueueConfig() controller.QueueConfig {
	cfg := controller.QueueConfig{Clock: e.Clock}
	if e.queueMetrics != nil {
		cfg.MetricsProvider = e.queueMetrics.QueueMetricsProvider()
	}
	return cfg
}

// NewKubeInformerFactory creates a SharedInformerFactory scoped to
// --namespace with --sync-period resync, plus opts, and registers it so it
// is started and waited on. Only informers requested from it before the
// Lease is won are started. Create separate factories for differently
// filtered views (e.g. pods with a label selector).
func (e *Env) NewKubeInformerFactory(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
	all := make([]informers.SharedInformerOption, 0, len(opts)+1)
	if e.Options.Namespace != "" {
		all = append(all, informers.WithNamespace(e.Options.Namespace))
	}
	all = append(all, opts...)
	f := informers.NewSharedInformerFactoryWithOptions(e.KubeClient, e.Options.SyncPeriod, all...)
	e.AddInformerFactory(f)
	return f
}

// AddInformerFactory registers a factory (e.g. the generated Flotilla one).
func (e *Env) AddInformerFactory(f InformerFactory) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.factories = append(e.factories, f)
}

// AddSource registers a Source.
func (e *Env) AddSource(s Source) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sources = append(e.sources, s)
}

// AddController registers a controller; it runs with --workers workers.
func (e *Env) AddController(c Controller) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.controllers = append(e.controllers, c)
}

// Controllers returns the names of the registered controllers.
func (e *Env) Controllers() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.controllers))
	for _, c := range e.controllers {
		out = append(out, c.Name())
	}
	return out
}

// EventRecorder returns a recorder posting Events as component Env.Name.
// scheme must know the types of the objects events are recorded about.
// The first call starts the shared broadcaster.
func (e *Env) EventRecorder(ctx context.Context, scheme *runtime.Scheme) record.EventRecorderLogger {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster == nil {
		e.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.KubeClient.CoreV1().Events("")})
	}
	return e.broadcaster.NewRecorder(scheme, corev1.EventSource{Component: e.Name})
}

func (e *Env) shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster != nil {
		e.broadcaster.Shutdown()
	}
	for _, f := range e.factories {
		if s, ok := f.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
	}
}

// runLeading starts informers, waits for them to sync, marks the binary
// ready and runs the controllers until ctx is done.
func (e *Env) runLeading(ctx context.Context, health *Health) error {
	logger := klog.FromContext(ctx)
	e.mu.Lock()
	factories := append([]InformerFactory(nil), e.factories...)
	sources := append([]Source(nil), e.sources...)
	controllers := append([]Controller(nil), e.controllers...)
	e.mu.Unlock()

	for _, f := range factories {
		f.Start(ctx.Done())
	}
	for _, s := range sources {
		go s.Start(ctx)
	}

	syncCtx, cancel := context.WithTimeout(ctx, e.Options.CacheSyncTimeout)
	defer cancel()
	logger.Info("Waiting for informer caches to sync", "factories", len(factories), "sources", len(sources))
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("informer cache for %v did not sync within %s", typ, e.Options.CacheSyncTimeout)
			}
		}
	}
	for _, s := range sources {
		if err := waitFor(syncCtx, s.HasSynced); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("source %s did not sync within %s", s.Name, e.Options.CacheSyncTimeout)
		}
	}
	health.SetSynced(true)
	logger.Info("Informer caches synced")

	if len(controllers) == 0 {
		logger.Info("No reconciler is enabled; idling until shutdown")
		<-ctx.Done()
		return nil
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(controllers))
	for _, c := range controllers {
		go func() {
			err := c.Run(runCtx, e.Options.Workers)
			if err == nil && runCtx.Err() == nil {
				err = fmt.Errorf("controller %s stopped unexpectedly", c.Name())
			} else if err != nil {
				err = fmt.Errorf("controller %s: %w", c.Name(), err)
			}
			errs <- err
		}()
	}
	var first error
	for range controllers {
		if err := <-errs; err != nil && first == nil {
			first = err
			stop() // one controller failing stops the binary
		}
	}
	return first
}
