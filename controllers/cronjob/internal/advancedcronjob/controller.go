// Package advancedcronjob is the AdvancedCronJob reconciler: on a cron schedule it creates a batch/v1 Job or a
// BroadcastJob named <acj>-<unix scheduled time>, applies the concurrency policy, keeps a bounded history of
// finished children, and reports the active children and the last scheduled time in the status.
package advancedcronjob

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue (and queue metrics).
const Name = "advancedcronjob"

// Controller reconciles AdvancedCronJobs.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	acjs appslisters.AdvancedCronJobLister
	jobs cache.Indexer // batch/v1 Jobs, indexed by owner UID
	bcjs cache.Indexer // BroadcastJobs, indexed by owner UID
	// defaultLoc reads schedules without a time zone: the process's local zone, as OpenKruise does.
	defaultLoc *time.Location
	lastRuns   *lastRuns
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers the reconciler needs from d's factories, registers its event handlers and returns
// it. Nothing starts until the factories are started and Run is called.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{
		defaultLoc: time.Local,
		lastRuns:   &lastRuns{m: map[types.NamespacedName]lastRun{}},
	}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
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
	c.acjs, c.jobs, c.bcjs = acjInf.Lister(), jobInf.GetIndexer(), bcjInf.GetIndexer()
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
