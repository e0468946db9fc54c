package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// revisionNames are a sync's current and update revisions and the (possibly bumped) collision count.
type revisionNames struct {
	current, update string
	collisions      *int32
}

// resolveRevisions finds or creates the update revision of ud's template and returns the names of the current
// and update revisions and the (possibly bumped) collision count.
func (c *Controller) resolveRevisions(ctx context.Context, ud *appsv1alpha1.UnitedDeployment) (revisionNames, error) {
	revs, err := c.revisions.List(ud)
	if err != nil {
		return revisionNames{}, err
	}
	var count int32
	if ud.Status.CollisionCount != nil {
		count = *ud.Status.CollisionCount
	}
	want, err := NewRevision(ud, revision.NextRevisionNumber(revs), &count)
	if err != nil {
		return revisionNames{}, err
	}
	res, err := revision.Resolve(ctx, c.revCtl, ud, want, revs, &count)
	if err != nil {
		return revisionNames{}, err
	}
	var out revisionNames
	if ud.Status.CollisionCount != nil || count != 0 {
		out.collisions = &count
	}
	out.current = res.Update.Name
	for _, r := range res.Revisions {
		if r.Name == ud.Status.CurrentRevision {
			out.current = r.Name
		}
	}
	out.update = res.Update.Name
	return out, nil
}

// truncateRevisions deletes the oldest revisions beyond spec.revisionHistoryLimit, never the current or update one.
func (c *Controller) truncateRevisions(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, st appsv1alpha1.UnitedDeploymentStatus) {
	revs, err := c.revisions.List(ud)
	if err != nil {
		return
	}
	live := sets.New(st.CurrentRevision)
	if st.UpdateStatus != nil {
		live.Insert(st.UpdateStatus.UpdatedRevision)
	}
	limit := 10
	if ud.Spec.RevisionHistoryLimit != nil {
		limit = int(*ud.Spec.RevisionHistoryLimit)
	}
	for _, r := range revision.Truncate(revs, live, limit) {
		if err := c.revCtl.Delete(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Deleting old revision", "revision", r.Name)
		}
	}
}

// deleteAll deletes the given subset workloads (one already gone counts as deleted).
func (c *Controller) deleteAll(ctx context.Context, objs []Observed) error {
	var errs []error
	for _, o := range objs {
		klog.FromContext(ctx).Info("Deleting subset workload", "kind", o.Kind, "workload", o.Obj.GetName(), "subset", o.SubsetName)
		if err := c.kinds[o.Kind].delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("fail to delete Subset (%s) %s/%s for %s: %w", o.Kind, o.Obj.GetNamespace(), o.Obj.GetName(), o.SubsetName, err))
		}
	}
	return errors.Join(errs...)
}

// subsetsResult is what syncSubsets did: whether it created or deleted workloads, and what failed.
type subsetsResult struct {
	provisioned  bool
	provisionErr error
	updateErr    error
}

// syncSubsets brings the subset workloads to the plan: provision, then, only once that succeeded (as in
// OpenKruise), the updates.
func (c *Controller) syncSubsets(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, w workloads, subsets map[string]Observed,
	plan subsetPlan, rev string, pending sets.Set[string]) subsetsResult {
	var res subsetsResult
	res.provisioned, res.provisionErr = c.provision(ctx, ud, w, subsets, plan.replicas, plan.partitions, rev, pending)
	if res.provisionErr == nil {
		res.updateErr = c.updateSubsets(ctx, ud, w, subsets, plan.replicas, plan.partitions, rev)
	}
	return res
}

// provision creates the workloads of topology subsets that have none (unless one created earlier is still on its
// way to the cache) and deletes those of subsets no longer in the topology. It reports whether it created or
// deleted anything.
func (c *Controller) provision(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, w workloads, subsets map[string]Observed,
	next, partitions map[string]int32, rev string, pending sets.Set[string]) (bool, error) {
	key := types.NamespacedName{Namespace: ud.Namespace, Name: ud.Name}
	want := sets.New[string]()
	var errs []error
	created := 0
	for i := range ud.Spec.Topology.Subsets {
		s := &ud.Spec.Topology.Subsets[i]
		want.Insert(s.Name)
		if _, ok := subsets[s.Name]; ok || pending.Has(s.Name) {
			continue
		}
		obj, err := w.create(ctx, Desired{UD: ud, Subset: s, Revision: rev, Replicas: next[s.Name], Partition: partitions[s.Name]})
		switch {
		case err == nil:
			c.creates.Expect(key, ud.UID, s.Name, expectedWorkload(w.kind(), obj.GetName()))
			created++
		case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
			// The create may have happened: wait for it rather than risk a second workload.
			c.creates.Expect(key, ud.UID, s.Name, expectedWorkload(w.kind(), ""))
		default:
			errs = append(errs, fmt.Errorf("fail to create Subset (%s) %s: %w", w.kind(), s.Name, err))
		}
	}
	if created > 0 {
		c.Recorder.Eventf(ud, corev1.EventTypeNormal, reasonSucceededSubsets, "Create %d Subset (%s)", created, w.kind())
	}
	var removed []Observed
	for name, o := range subsets {
		if !want.Has(name) {
			removed = append(removed, o)
			delete(subsets, name)
		}
	}
	if err := c.deleteAll(ctx, removed); err != nil {
		errs = append(errs, err)
	} else if len(removed) > 0 {
		c.Recorder.Eventf(ud, corev1.EventTypeNormal, reasonSucceededSubsets, "Delete %d Subset (%s)", len(removed), w.kind())
	}
	err := errors.Join(errs...)
	if err != nil {
		c.Recorder.Event(ud, corev1.EventTypeWarning, reasonFailedSubsets, err.Error())
	}
	return created > 0 || len(removed) > 0, err
}

// expectedWorkload is what a create expectation records: the created workload's kind and name ("" when the
// create's outcome is unknown). The kind is kept because the template's kind can change before the cache shows
// the workload, and only the informer of its own kind ever will.
func expectedWorkload(k Kind, name string) string { return string(k) + "/" + name }

// createSettled reports whether the create recorded as expected (by expectedWorkload) needs no more waiting,
// the template's kind being now: a workload of another kind is stale (deleted once it is seen) and cannot stand
// for its subset, so the subset's new workload need not wait for it; one of this kind is settled when the cache
// holds it, and a create of unknown outcome only by its expectation's timeout.
func (c *Controller) createSettled(namespace string, now Kind, expected string) bool {
	k, name, _ := strings.Cut(expected, "/")
	if Kind(k) != now {
		return true
	}
	return name != "" && c.kinds[now] != nil && c.kinds[now].cached(namespace, name)
}

// updateSubsets rewrites the existing subset workloads of the topology that NeedsUpdate.
func (c *Controller) updateSubsets(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, w workloads, subsets map[string]Observed,
	next, partitions map[string]int32, rev string) error {
	var errs []error
	for i := range ud.Spec.Topology.Subsets {
		s := &ud.Spec.Topology.Subsets[i]
		o, ok := subsets[s.Name]
		if !ok {
			continue
		}
		why := NeedsUpdate(o, rev, next[s.Name], partitions[s.Name], string(s.Patch.Raw))
		if why == "" {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Updating subset workload", "kind", w.kind(), "workload", o.Obj.GetName(), "subset", s.Name,
			"reason", why, "revision", rev, "replicas", next[s.Name], "partition", partitions[s.Name])
		obj, err := w.update(ctx, o, Desired{UD: ud, Subset: s, Revision: rev, Replicas: next[s.Name], Partition: partitions[s.Name]})
		if err != nil {
			c.Recorder.Event(ud, corev1.EventTypeWarning, reasonFailedSubsets,
				fmt.Sprintf("Error updating PodSet (%s) %s when updating: %s", w.kind(), o.Obj.GetName(), err))
			errs = append(errs, fmt.Errorf("update %s %s: %w", w.kind(), o.Obj.GetName(), err))
			continue
		}
		c.written.Expect(obj)
	}
	return errors.Join(errs...)
}
