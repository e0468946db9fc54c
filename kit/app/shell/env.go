package shell

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Controller is what a binary runs once its caches synced: Run blocks until
// ctx is done, running workers concurrent syncs, and returns nil on a clean
// shutdown. kit/controller.Loop implements it.
type Controller interface {
	Name() string
	Run(ctx context.Context, workers int) error
}

// InformerFactory is satisfied by client-go's SharedInformerFactory, by the
// factories informer-gen generates for Flotilla's clientset and by
// Informers, without this package importing either.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// Source is anything else that must run and sync before controllers start:
// Start is called in a goroutine and should return when ctx is done;
// HasSynced gates /readyz and the controllers' start.
type Source struct {
	Name      string
	Start     func(ctx context.Context)
	HasSynced func() bool
}

// Env is what a binary's Setup receives: configuration, the REST
// configuration and registration points. What is registered starts only
// once Setup returned (in kit/app, once the replica leads).
type Env struct {
	// Name is the binary's name (also its user agent).
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
	RESTConfig *rest.Config
	// Metrics is where controllers register their own collectors.
	Metrics prometheus.Registerer
	// QueueMetrics, when set, provides the work queues' metrics
	// (QueueConfig).
	QueueMetrics *Metrics

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
	if e.QueueMetrics != nil {
		cfg.MetricsProvider = e.QueueMetrics.QueueMetricsProvider()
	}
	return cfg
}

// AddInformerFactory registers a factory (e.g. the generated Flotilla one).
func (e *Env) AddInformerFactory(f InformerFactory) { register(&e.mu, &e.factories, f) }

// AddSource registers a Source.
func (e *Env) AddSource(s Source) { register(&e.mu, &e.sources, s) }

// AddController registers a controller; it runs with --workers workers.
func (e *Env) AddController(c Controller) { register(&e.mu, &e.controllers, c) }

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

// EventRecorderTo returns a recorder posting Events as component Env.Name
// through sink; scheme must know the types of the objects events are
// recorded about. The first call starts the shared broadcaster on its sink;
// later calls share it (their sink is not used).
func (e *Env) EventRecorderTo(ctx context.Context, sink record.EventSink, scheme *runtime.Scheme) record.EventRecorderLogger {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster == nil {
		e.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		e.broadcaster.StartRecordingToSink(sink)
	}
	return e.broadcaster.NewRecorder(scheme, corev1.EventSource{Component: e.Name})
}

// Shutdown stops the event broadcaster and the registered factories that
// can be stopped.
func (e *Env) Shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broadcaster != nil {
		e.broadcaster.Shutdown()
	}
	ShutdownFactories(e.factories)
}

// ShutdownFactories stops each factory that has a Shutdown method.
func ShutdownFactories(factories []InformerFactory) {
	for _, f := range factories {
		if s, ok := f.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
	}
}

// RunControllers starts the registered factories and sources, waits for
// them to sync (at most Options.CacheSyncTimeout), marks health synced and
// runs the controllers until ctx is done; one controller failing stops the
// others and its error is returned.
func (e *Env) RunControllers(ctx context.Context, health *Health) error {
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
	if err := e.waitSynced(syncCtx, factories, sources); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	health.SetSynced(true)
	logger.Info("Informer caches synced")
	if len(controllers) == 0 {
		logger.Info("No reconciler is enabled; idling until shutdown")
		<-ctx.Done()
		return nil
	}
	return runAll(ctx, controllers, e.Options.Workers)
}

func (e *Env) waitSynced(ctx context.Context, factories []InformerFactory, sources []Source) error {
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("informer cache for %v did not sync within %s", typ, e.Options.CacheSyncTimeout)
			}
		}
	}
	for _, s := range sources {
		if err := WaitFor(ctx, s.HasSynced); err != nil {
			return fmt.Errorf("source %s did not sync within %s", s.Name, e.Options.CacheSyncTimeout)
		}
	}
	return nil
}

// runAll runs every controller until ctx is done or one fails, which stops
// the others; the first error wins.
func runAll(ctx context.Context, controllers []Controller, workers int) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(controllers))
	for _, c := range controllers {
		go func() {
			err := c.Run(runCtx, workers)
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

// register appends v to one of the registries under mu, like every read of
// them.
func register[T any](mu *sync.Mutex, list *[]T, v T) {
	mu.Lock()
	defer mu.Unlock()
	*list = append(*list, v)
}
