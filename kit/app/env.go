package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

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
// registration points (shell.Env's, promoted). Setup runs before leader
// election; factories, sources and controllers registered here start only
// once this replica leads, replica factories and components on every
// replica at once.
type Env struct {
	shell.Env
	// KubeClient is the Kubernetes clientset.
	KubeClient kubernetes.Interface
	// Identity is this replica's leader-election identity.
	Identity string

	mu sync.Mutex
	// replica* run on every replica, leader or not.
	replicaFactories  []InformerFactory
	replicaComponents []ReplicaComponent
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

// AddReplicaInformerFactory registers a factory started on every replica at
// start-up (not only the leader), for what replica components read: keep it
// to small, cheap informers (a webhook's SidecarSets or PUBs, not pods).
// Informers requested from it later by a controller start when it leads.
func (e *Env) AddReplicaInformerFactory(f InformerFactory) { register(&e.mu, &e.replicaFactories, f) }

// AddReplicaComponent registers a component run on every replica once the
// replica factories synced. A binary with one is ready (/readyz) when its
// components are, leader or standby: every replica takes webhook traffic.
func (e *Env) AddReplicaComponent(c ReplicaComponent) { register(&e.mu, &e.replicaComponents, c) }

// EventRecorder returns a recorder posting Events as component Env.Name
// through KubeClient. scheme must know the types of the objects events are
// recorded about. The first call starts the shared broadcaster.
func (e *Env) EventRecorder(ctx context.Context, scheme *runtime.Scheme) record.EventRecorderLogger {
	return e.EventRecorderTo(ctx, &typedcorev1.EventSinkImpl{Interface: e.KubeClient.CoreV1().Events("")}, scheme)
}

func (e *Env) shutdown() {
	e.Shutdown()
	e.mu.Lock()
	defer e.mu.Unlock()
	shell.ShutdownFactories(e.replicaFactories)
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
	health.ReplaceReadyz("informer-sync", checks)

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
	return e.RunControllers(ctx, health)
}

// register appends v to one of the replica registries under mu, like every
// read of them.
func register[T any](mu *sync.Mutex, list *[]T, v T) {
	mu.Lock()
	defer mu.Unlock()
	*list = append(*list, v)
}
