package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

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

// ReplicaComponent runs on every replica from start-up, whether it leads or
// not: an admission webhook server, which the API server calls on any
// replica behind the Service. Only reconcilers wait for the Lease.
type ReplicaComponent struct {
	Name string
	// Run blocks until ctx is done and returns nil then; an error (or a
	// return before shutdown) stops the binary with exit 1.
	Run func(ctx context.Context) error
	// Ready is the component's /readyz check (e.g. "webhook serving");
	// nil means ready once the replica informers synced.
	Ready func() error
	// Early starts the component at once instead of after the replica
	// informers synced: for a component those informers depend on, such as
	// the CRD conversion webhook of a kind they read at a version other than
	// the stored one (waiting would deadlock a fresh start). /readyz still
	// waits for the caches; ReplicaSyncedFrom(ctx) tells the component when
	// they synced, so it can hold back work that needs them.
	Early bool
}

type replicaSyncedKey struct{}

// ReplicaSyncedFrom returns the function that reports whether the replica
// informers have synced, from the ctx a ReplicaComponent's Run receives; nil
// outside kit/app.
func ReplicaSyncedFrom(ctx context.Context) func() bool {
	f, _ := ctx.Value(replicaSyncedKey{}).(func() bool)
	return f
}

// Env is what a binary's Setup receives: configuration, clients and
// registration points. Setup runs before leader election; factories,
// sources and controllers registered here start only once this replica
// leads, replica factories and components on every replica at once.
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
	// replica* run on every replica, leader or not.
	replicaFactories  []InformerFactory
	replicaComponents []ReplicaComponent
	broadcaster       record.EventBroadcaster
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
func (e *Env) AddInformerFactory(f InformerFactory) { register(e, &e.factories, f) }

// AddReplicaInformerFactory registers a factory started on every replica at
// start-up (not only the leader), for what replica components read: keep it
// to small, cheap informers (a webhook's SidecarSets or PUBs, not pods).
// Informers requested from it later by a controller start when it leads.
func (e *Env) AddReplicaInformerFactory(f InformerFactory) { register(e, &e.replicaFactories, f) }

// AddReplicaComponent registers a component run on every replica once the
// replica factories synced. A binary with one is ready (/readyz) when its
// components are, leader or standby: every replica takes webhook traffic.
func (e *Env) AddReplicaComponent(c ReplicaComponent) { register(e, &e.replicaComponents, c) }

// AddSource registers a Source.
func (e *Env) AddSource(s Source) { register(e, &e.sources, s) }

// AddController registers a controller; it runs with --workers workers.
func (e *Env) AddController(c Controller) { register(e, &e.controllers, c) }

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
	for _, f := range append(append([]InformerFactory(nil), e.factories...), e.replicaFactories...) {
		if s, ok := f.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
	}
}

// startReplica starts the Early replica components and the replica
// factories and, once they synced, the other replica components; it swaps the readiness checks so that a standby is
// ready too. It returns nil when there is nothing to run; otherwise a channel
// that yields the first component failure (or nil per component stopped at
// shutdown) and is closed once all stopped.
func (e *Env) startReplica(ctx context.Context, health *Health) <-chan error {
	e.mu.Lock()
	factories := append([]InformerFactory(nil), e.replicaFactories...)
	components := append([]ReplicaComponent(nil), e.replicaComponents...)
	e.mu.Unlock()
	if len(factories) == 0 && len(components) == 0 {
		return nil
	}
	var synced atomic.Bool
	checks := []Check{{Name: "replica-informer-sync", Check: func(*http.Request) error {
		if !synced.Load() {
			return errors.New("replica informer caches have not synced yet")
		}
		return nil
	}}}
	for _, c := range components {
		checks = append(checks, Check{Name: c.Name, Check: func(*http.Request) error {
			if !synced.Load() {
				return errors.New("waiting for replica informer caches")
			}
			if c.Ready == nil {
				return nil
			}
			return c.Ready()
		}})
	}
	// The leader's informer-sync stops gating readiness: a standby serves
	// webhooks and must receive traffic; a leader still syncing serves them
	// too.
	health.replaceReadyz("informer-sync", checks)

	out := make(chan error, len(components)+1)
	logger := klog.FromContext(ctx)
	ctx = context.WithValue(ctx, replicaSyncedKey{}, synced.Load)
	var wg sync.WaitGroup
	run := func(c ReplicaComponent) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Run(ctx)
			if err == nil && ctx.Err() == nil {
				err = fmt.Errorf("replica component %s stopped unexpectedly", c.Name)
			} else if err != nil {
				err = fmt.Errorf("replica component %s: %w", c.Name, err)
			}
			out <- err
		}()
	}
	var late []ReplicaComponent
	for _, c := range components {
		if c.Early {
			run(c)
		} else {
			late = append(late, c)
		}
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	go func() {
		defer func() { wg.Wait(); close(out) }()
		syncCtx, cancel := context.WithTimeout(ctx, e.Options.CacheSyncTimeout)
		defer cancel()
		for _, f := range factories {
			for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
				if !ok {
					if ctx.Err() == nil {
						out <- fmt.Errorf("replica informer cache for %v did not sync within %s", typ, e.Options.CacheSyncTimeout)
					}
					return
				}
			}
		}
		synced.Store(true)
		logger.Info("Replica informer caches synced; starting replica components", "components", len(late))
		for _, c := range late {
			run(c)
		}
	}()
	return out
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

// register appends v to one of e's registries (the Add* methods), under
// e.mu like every read of them.
func register[T any](e *Env, list *[]T, v T) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*list = append(*list, v)
}
