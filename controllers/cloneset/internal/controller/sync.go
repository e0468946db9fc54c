package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/workload"
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
	// Revisions: the CloneSet's history, current and update revisions.
	workload.Revisions
	shortHash bool
	rollback  bool // gate CloneSetPartitionRollback
	// deleted are the pods this process deleted for the CloneSet whose
	// names were not yet trimmed from podsToDelete.
	deleted sets.Set[string]
	// requeue collects the time-driven requeues the steps ask for.
	requeue controller.Requeue
}

// sync reconciles one CloneSet: gather → refresh pods → scale, or else
// update → status → housekeeping.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	cs, ok, err := workload.Get(c.Base, key, c.sets.CloneSets(key.Namespace).Get, c.forget)
	if !ok || c.ScaleInFlight(ctx, key, c.scaleExp) {
		return err
	}
	st, err := c.gather(ctx, key, cs)
	if err != nil || c.OwnWritesPending(ctx, key, slices.Values(st.pods), st.cs, st.Update) {
		return err
	}

	var scaleErr, updateErr error
	var scaled bool
	if cs.DeletionTimestamp == nil {
		c.PreDownload(ctx, jobWorkload(cs), func() predownload.Input { return preDownloadInput(st) })
		scaled, scaleErr, updateErr = workload.TakeSteps(ctx, st, c.refreshPods, c.scale, c.update)
	}

	if err := c.updateStatus(ctx, st, scaled, scaleErr, updateErr); err != nil {
		return err
	}
	if err := c.housekeeping(ctx, st); err != nil {
		return err
	}
	// Permanent errors (InPlaceOnly) are reported in status and events.
	return c.Finish(key, errors.Join(scaleErr, updateErr), &st.requeue)
}

// gather reads the CloneSet's pods, PVCs and revisions from the caches,
// adopts and releases pods by selector, and syncs the revisions.
func (c *Controller) gather(ctx context.Context, key types.NamespacedName, cs *appsv1alpha1.CloneSet) (*syncState, error) {
	st := &syncState{
		key:       key,
		cs:        cs,
		now:       c.Clock.Now(),
		shortHash: c.Gates.Enabled(features.CloneSetShortHash),
		rollback:  c.Gates.Enabled(features.CloneSetPartitionRollback),
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
	if err := c.syncRevisions(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// isUpdated reports whether the pod runs the update revision (its
// controller-revision-hash is the revision's name or, under
// CloneSetShortHash, its hash).
func (st *syncState) isUpdated(p *corev1.Pod) bool {
	return revisionMatches(p, st.Update.Name)
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
	return c.TruncateHistory(ctx, st.Revisions, st.cs.Spec.RevisionHistoryLimit, slices.Values(st.all))
}
