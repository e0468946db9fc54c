package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// writeConcurrency bounds the parallel pod writes of one sync (refreshing
// pods, updating them); the client's QPS/burst still applies on top.
const writeConcurrency = 16

// syncState is what one sync knows about a CloneSet. Everything in it comes
// from informer caches and is read-only.
type syncState struct {
	key  types.NamespacedName
	cs   *appsv1alpha1.CloneSet
	now  time.Time
	pods []*corev1.Pod // active pods the CloneSet controls
	// all adds the terminating and finished ones: every pod it controls, as
	// gathered at the start of the sync (one index lookup per sync).
	all  []*corev1.Pod
	pvcs []*corev1.PersistentVolumeClaim
	// revisions are the CloneSet's ControllerRevisions, oldest first.
	revisions       []*appsv1.ControllerRevision
	current, update *appsv1.ControllerRevision
	collisionCount  int32
	shortHash       bool
	rollback        bool // gate CloneSetPartitionRollback
	// deleted are the pods this process deleted for the CloneSet whose
	// names were not yet trimmed from podsToDelete.
	deleted sets.Set[string]
	// requeue collects the time-driven requeues the steps ask for.
	requeue controller.Requeue
}

// sync reconciles one CloneSet: gather → refresh pods → scale, or else
// update → status → housekeeping.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	logger := klog.FromContext(ctx)
	cs, err := c.sets.CloneSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.scaleExp.Delete(key)
		c.deletedNames.drop(key)
		return nil
	}
	if err != nil {
		return err
	}
	if ok, age := c.scaleExp.Satisfied(key); !ok {
		logger.V(4).Info("Waiting for pod creations/deletions to be observed", "pending", age)
		c.queue.AddAfter(key, c.scaleExp.Timeout()-age)
		return nil
	} else if age > 0 {
		logger.Info("Scale expectations timed out: an event was lost, acting on the cache", "after", age)
	}

	st, err := c.gather(ctx, key, cs)
	if err != nil {
		return err
	}
	if wait := c.staleCache(st); wait > 0 {
		logger.V(4).Info("Waiting for the cache to show our own writes", "wait", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}

	var scaleErr, updateErr error
	var scaled bool
	if cs.DeletionTimestamp == nil {
		c.preDownload(ctx, st)
		refreshed, refreshErr := c.refreshPods(ctx, st)
		scaled, scaleErr = c.scale(ctx, st)
		switch {
		case refreshErr != nil:
			updateErr = refreshErr
		case !scaled && !refreshed && scaleErr == nil:
			updateErr = c.update(ctx, st)
		}
	}

	if err := c.updateStatus(ctx, st, scaled, scaleErr, updateErr); err != nil {
		return err
	}
	if err := c.housekeeping(ctx, st); err != nil {
		return err
	}
	err = errors.Join(scaleErr, updateErr)
	if controller.Retryable(err) != nil {
		return err
	}
	if d := st.requeue.Earliest(); d > 0 {
		c.queue.AddAfter(key, d)
	}
	// nil, or permanent (InPlaceOnly: reported in status and events): the
	// loop does not retry it.
	return err
}

// gather reads the CloneSet's pods, PVCs and revisions from the caches,
// adopts and releases pods by selector, and syncs the revisions.
func (c *Controller) gather(ctx context.Context, key types.NamespacedName, cs *appsv1alpha1.CloneSet) (*syncState, error) {
	st := &syncState{
		key:       key,
		cs:        cs,
		now:       c.clock.Now(),
		shortHash: c.gates.Enabled(features.CloneSetShortHash),
		rollback:  c.gates.Enabled(features.CloneSetPartitionRollback),
		deleted:   c.deletedNames.get(key),
	}
	pods, err := c.claimPods(ctx, cs)
	if err != nil {
		return nil, err
	}
	st.all = pods
	for _, p := range pods {
		if podutil.IsActive(p) {
			st.pods = append(st.pods, p)
		}
	}
	if st.pvcs, err = c.ownedPVCs(cs); err != nil {
		return nil, err
	}
	if st.revisions, err = c.revisions.List(cs); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	if err := c.syncRevisions(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// staleCache returns how long to wait when the cache does not yet show a
// write this controller made to the update revision or to one of the pods.
func (c *Controller) staleCache(st *syncState) time.Duration {
	return expectations.WaitAll(c.rvExp, slices.Values(st.pods), st.cs, st.update)
}

// isUpdated reports whether the pod runs the update revision (its
// controller-revision-hash is the revision's name or, under
// CloneSetShortHash, its hash).
func (st *syncState) isUpdated(p *corev1.Pod) bool {
	return revisionMatches(p, st.update.Name)
}

func revisionMatches(p *corev1.Pod, revisionName string) bool {
	return revision.HashMatches(p.Labels[pub.ControllerRevisionHashLabelKey], revisionName)
}

// isSpecifiedDelete: labelled apps.kruise.io/specified-delete or named in
// scaleStrategy.podsToDelete.
func (st *syncState) isSpecifiedDelete(p *corev1.Pod) bool {
	if podutil.IsSpecifiedDelete(p) {
		return true
	}
	for _, n := range st.cs.Spec.ScaleStrategy.PodsToDelete {
		if n == p.Name {
			return true
		}
	}
	return false
}

// housekeeping trims spec.scaleStrategy.podsToDelete to pods that still
// exist and the revision history to revisionHistoryLimit.
func (c *Controller) housekeeping(ctx context.Context, st *syncState) error {
	if err := c.truncatePodsToDelete(ctx, st); err != nil {
		return err
	}
	live := sets.New(st.update.Name)
	if st.current != nil {
		live.Insert(st.current.Name)
	}
	all := st.all
	for _, p := range all {
		if h := p.Labels[pub.ControllerRevisionHashLabelKey]; h != "" {
			live.Insert(h)
		}
	}
	limit := int(ptr.Deref(st.cs.Spec.RevisionHistoryLimit, 10))
	for _, r := range revision.Truncate(st.revisions, live, limit) {
		if err := c.revControl.Delete(ctx, r); err != nil {
			return fmt.Errorf("truncate history: %w", err)
		}
	}
	return nil
}
