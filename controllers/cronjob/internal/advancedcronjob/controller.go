// Package advancedcronjob is the AdvancedCronJob reconciler: on a cron schedule it creates a batch/v1 Job or a
// BroadcastJob named <acj>-<unix scheduled time>, applies the concurrency policy, keeps a bounded history of
// finished children, and reports the active children and the last scheduled time in the status.
package advancedcronjob

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue (and queue metrics).
const Name = "advancedcronjob"

// Controller reconciles AdvancedCronJobs.
type Controller struct {
	kube     kubernetes.Interface
	client   versioned.Interface
	acjs     appslisters.AdvancedCronJobLister
	jobs     cache.Indexer // batch/v1 Jobs, indexed by owner UID
	bcjs     cache.Indexer // BroadcastJobs, indexed by owner UID
	clock    clock.PassiveClock
	recorder record.EventRecorder
	// Reconciler is the queue and loop (and Name and Run).
	*controller.Reconciler[types.NamespacedName]
	// defaultLoc reads schedules without a time zone: the process's local zone, as OpenKruise does.
	defaultLoc *time.Location
	lastRuns   *lastRuns
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers the reconciler needs from d's factories, registers its event handlers and returns
// it. Nothing starts until the factories are started and Run is called.
func New(d wiring.Deps) (*Controller, error) {
	if err := d.Require(Name); err != nil {
		return nil, err
	}
	acjInf := d.Informers.Apps().V1alpha1().AdvancedCronJobs()
	jobInf := d.KubeInformers.Batch().V1().Jobs().Informer()
	bcjInf := d.Informers.Apps().V1alpha1().BroadcastJobs().Informer()
	for _, inf := range []cache.SharedIndexInformer{jobInf, bcjInf} {
		if err := ensureOwnerUIDIndex(inf); err != nil {
			return nil, fmt.Errorf("advancedcronjob: add owner index: %w", err)
		}
	}
	c := &Controller{
		kube:       d.Kube,
		client:     d.Client,
		acjs:       acjInf.Lister(),
		jobs:       jobInf.GetIndexer(),
		bcjs:       bcjInf.GetIndexer(),
		clock:      d.PassiveClock(),
		recorder:   d.Recorder,
		defaultLoc: time.Local,
		lastRuns:   &lastRuns{m: map[types.NamespacedName]lastRun{}},
	}
	c.Reconciler = controller.NewReconciler(Name, d.QueueOptions, d.QueueConfig, c.sync)
	c.WaitFor(acjInf.Informer().HasSynced, jobInf.HasSynced, bcjInf.HasSynced)
	if err := c.addHandlers(acjInf.Informer(), jobInf, bcjInf); err != nil {
		return nil, fmt.Errorf("advancedcronjob: %w", err)
	}
	return c, nil
}

// lastRuns remembers, per AdvancedCronJob, the latest slot this process created a child for. The informer cache
// can lag behind our own writes; without this a sync right after a create could see neither the child nor the
// new status and count the same slot as missed again (the deterministic child name would still prevent a
// duplicate, but not a second Replace deletion or a misleading event).
type lastRuns struct {
	mu sync.Mutex
	m  map[types.NamespacedName]lastRun
}

type lastRun struct {
	uid types.UID // a re-created AdvancedCronJob of the same name starts afresh
	at  time.Time
}

func (r *lastRuns) get(key types.NamespacedName, uid types.UID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr, ok := r.m[key]; ok && lr.uid == uid {
		return lr.at
	}
	return time.Time{}
}

func (r *lastRuns) set(key types.NamespacedName, uid types.UID, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr, ok := r.m[key]; ok && lr.uid == uid && lr.at.After(at) {
		return
	}
	r.m[key] = lastRun{uid: uid, at: at}
}

func (r *lastRuns) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}
