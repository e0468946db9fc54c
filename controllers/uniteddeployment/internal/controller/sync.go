package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// Event reasons, as OpenKruise records them.
const (
	reasonFailedRevision    = "FailedRevisionProvision"
	reasonFailedDuplicates  = "FailedDeleteDuplicatedSubsets"
	reasonFailedReplicas    = "Failed SpecifySubsetReplicas"
	reasonSucceededSubsets  = "SuccessfulUpdateSubset"
	reasonFailedSubsets     = "FailedUpdateSubset"
	reasonUnsupportedSubset = "UnsupportedSubsetKind"
)

// sync reconciles one UnitedDeployment: gather (revisions, subset workloads) → decide (split, partitions) → act
// (create, delete, update workloads) → status.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	ud, found, err := kitcontroller.Lookup("UnitedDeployment", key, c.uds.UnitedDeployments(key.Namespace).Get)
	if err != nil || !found {
		if !found {
			c.creates.Forget(key)
		}
		return err
	}
	if ud.DeletionTimestamp != nil {
		return nil // the garbage collector deletes the subset workloads after it
	}
	logger := klog.FromContext(ctx).WithValues("unitedDeployment", klog.KObj(ud))
	ctx = klog.NewContext(ctx, logger)

	kind := TemplateKind(ud)
	w := c.kinds[kind]
	if w == nil {
		// The API server's rules require one template; its kind may still not be served (e.g. no CloneSet CRD).
		msg := fmt.Sprintf("subset kind %q is not served by the API server", kind)
		c.recorder.Event(ud, corev1.EventTypeWarning, reasonUnsupportedSubset, msg)
		return c.writeStatus(ctx, ud, c.unsupportedStatus(ud, msg))
	}
	all, err := c.allSubsets(ud)
	if err != nil {
		return err
	}
	objs := []metav1.Object{ud}
	for _, o := range all {
		objs = append(objs, o.Obj)
	}
	if wait := c.written.Wait(objs...); wait > 0 {
		c.queue.AddAfter(key, wait) // our own last write is not in the cache yet
		return nil
	}

	current, update, collisions, err := c.resolveRevisions(ctx, ud)
	if err != nil {
		c.recorder.Event(ud, corev1.EventTypeWarning, reasonFailedRevision, err.Error())
		return err
	}

	subsets, stale := Classify(ud, kind, all)
	if err := c.deleteAll(ctx, stale); err != nil {
		c.recorder.Event(ud, corev1.EventTypeWarning, reasonFailedDuplicates, err.Error())
		return err
	}

	replicasNow := map[string]int32{}
	for name, o := range subsets {
		replicasNow[name] = o.SpecReplicas
	}
	var requeue kitcontroller.Requeue
	states, subsetConds := c.adaptiveStates(ud, subsets, &requeue)
	next, err := Allocate(ud, replicasNow, states)
	if err != nil {
		// The API server's rules reject such a spec; it can only be one admitted before them. Retrying changes nothing.
		c.recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedReplicas, "Specified subset replicas is ineffective: %s", err.Error())
		return kitcontroller.Permanent(err)
	}
	partitions := Partitions(ud, next)

	pending, pendingWait := c.creates.Pending(key, ud.UID, func(name string) bool { return w.cached(ud.Namespace, name) })
	provisioned, provErr := c.provision(ctx, ud, w, subsets, next, partitions, update, pending)
	var updErr error
	if provErr == nil {
		updErr = c.updateSubsets(ctx, ud, w, subsets, next, partitions, update)
	}

	in := StatusInput{
		Subsets: map[string]Observed{}, Pods: map[string]PodCounts{}, NextReplicas: next, NextPartitions: partitions,
		CurrentRevision: current, UpdateRevision: update, CollisionCount: collisions, Selector: selectorString(ud),
		Provisioned: provisioned, ProvisionErr: provErr, UpdateErr: updErr, Now: metav1.NewTime(c.clock.Now()),
		SubsetConditions: subsetConds,
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if o, ok := subsets[s.Name]; ok {
			in.Subsets[s.Name] = o
			in.Pods[s.Name] = CountUpdated(c.subsetPods(o), update)
		}
	}
	st := CalculateStatus(ud, in)
	if err := c.writeStatus(ctx, ud, st); err != nil {
		return err
	}
	c.truncateRevisions(ctx, ud, st)
	requeue.After(pendingWait)
	if d := requeue.Earliest(); d > 0 {
		c.queue.AddAfter(key, d)
	}
	return errors.Join(provErr, updErr)
}

// adaptiveStates runs the Adaptive strategy's schedulability check on each existing subset of the topology: their
// states for Allocate and their new Schedulable conditions for the status (both nil for the Fixed strategy).
func (c *Controller) adaptiveStates(ud *appsv1alpha1.UnitedDeployment, subsets map[string]Observed, requeue *kitcontroller.Requeue) (
	map[string]SubsetState, map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition) {
	strategy := ud.Spec.Topology.ScheduleStrategy
	if strategy.Type != appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType {
		return nil, nil
	}
	states := map[string]SubsetState{}
	conds := map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition{}
	now := c.clock.Now()
	for _, s := range ud.Spec.Topology.Subsets {
		o, ok := subsets[s.Name]
		if !ok {
			continue // a subset not created yet is schedulable
		}
		var prev []appsv1alpha1.UnitedDeploymentSubsetCondition
		if ss := subsetStatus(&ud.Status, s.Name); ss != nil {
			prev = ss.Conditions
		}
		unschedulable, cs, after := Schedulability(strategy, prev, o, c.subsetPods(o), now)
		states[s.Name] = SubsetState{ReadyReplicas: o.ReadyReplicas, Unschedulable: unschedulable}
		conds[s.Name] = cs
		requeue.After(after)
	}
	return states, conds
}

// allSubsets returns every workload, of any kind, whose controllerRef is ud.
func (c *Controller) allSubsets(ud *appsv1alpha1.UnitedDeployment) ([]Observed, error) {
	var all []Observed
	for _, k := range AllKinds {
		if w := c.kinds[k]; w != nil {
			objs, err := w.controlled(ud)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
		}
	}
	return all, nil
}

// Classify splits ud's workloads into the subsets to keep (of the template's kind, one per subset name, the
// oldest when there are several) and the ones to delete: duplicates and workloads of another kind (the template
// changed kind). Workloads of the right kind without a subset name are left alone, as OpenKruise leaves them.
// Subsets no longer in the topology are kept here; provision deletes them.
func Classify(ud *appsv1alpha1.UnitedDeployment, kind Kind, all []Observed) (keep map[string]Observed, stale []Observed) {
	byName := map[string][]Observed{}
	for _, o := range all {
		switch {
		case o.Kind != kind:
			stale = append(stale, o)
		case o.SubsetName != "":
			byName[o.SubsetName] = append(byName[o.SubsetName], o)
		}
	}
	keep = map[string]Observed{}
	for name, objs := range byName {
		sort.Slice(objs, func(i, j int) bool {
			ti, tj := objs[i].Obj.GetCreationTimestamp(), objs[j].Obj.GetCreationTimestamp()
			if !ti.Equal(&tj) {
				return ti.Before(&tj)
			}
			return objs[i].Obj.GetName() < objs[j].Obj.GetName()
		})
		keep[name] = objs[0]
		stale = append(stale, objs[1:]...)
	}
	return keep, stale
}

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
			c.creates.Expect(key, ud.UID, s.Name, obj.GetName())
			created++
		case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
			// The create may have happened: wait for it rather than risk a second workload.
			c.creates.Expect(key, ud.UID, s.Name, "")
		default:
			errs = append(errs, fmt.Errorf("fail to create Subset (%s) %s: %w", w.kind(), s.Name, err))
		}
	}
	if created > 0 {
		c.recorder.Eventf(ud, corev1.EventTypeNormal, reasonSucceededSubsets, "Create %d Subset (%s)", created, w.kind())
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
		c.recorder.Eventf(ud, corev1.EventTypeNormal, reasonSucceededSubsets, "Delete %d Subset (%s)", len(removed), w.kind())
	}
	err := errors.Join(errs...)
	if err != nil {
		c.recorder.Event(ud, corev1.EventTypeWarning, reasonFailedSubsets, err.Error())
	}
	return created > 0 || len(removed) > 0, err
}

// NeedsUpdate reports why a subset workload must be rewritten ("" if it need not): another revision, replicas,
// partition or patch than wanted.
func NeedsUpdate(o Observed, rev string, replicas, partition int32, patch string) string {
	switch {
	case o.Revision() != rev:
		return "revision changed"
	case o.SpecReplicas != replicas:
		return "replicas changed"
	case !o.NoPartition && o.SpecPartition != partition:
		return "partition changed"
	case o.Patch() != patch:
		return "patch changed"
	}
	return ""
}

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
			c.recorder.Event(ud, corev1.EventTypeWarning, reasonFailedSubsets,
				fmt.Sprintf("Error updating PodSet (%s) %s when updating: %s", w.kind(), o.Obj.GetName(), err))
			errs = append(errs, fmt.Errorf("update %s %s: %w", w.kind(), o.Obj.GetName(), err))
			continue
		}
		c.written.Expect(obj)
	}
	return errors.Join(errs...)
}

// subsetPods returns the cached pods of a subset workload: the pods of its namespace and subset name that its
// selector matches.
func (c *Controller) subsetPods(o Observed) []*corev1.Pod {
	objs, err := c.pods.ByIndex(podsBySubset, o.Obj.GetNamespace()+"/"+o.SubsetName)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); ok && kitcontroller.SelectorMatches(o.Selector, p.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// resolveRevisions finds or creates the update revision of ud's template and returns the names of the current
// and update revisions and the (possibly bumped) collision count.
func (c *Controller) resolveRevisions(ctx context.Context, ud *appsv1alpha1.UnitedDeployment) (current, update string, collisions *int32, err error) {
	revs, err := c.revisions.List(ud)
	if err != nil {
		return "", "", nil, err
	}
	var count int32
	if ud.Status.CollisionCount != nil {
		count = *ud.Status.CollisionCount
	}
	want, err := NewRevision(ud, revision.NextRevisionNumber(revs), &count)
	if err != nil {
		return "", "", nil, err
	}
	res, err := revision.Resolve(ctx, c.revCtl, ud, want, revs, &count)
	if err != nil {
		return "", "", nil, err
	}
	if ud.Status.CollisionCount != nil || count != 0 {
		collisions = &count
	}
	current = res.Update.Name
	for _, r := range res.Revisions {
		if r.Name == ud.Status.CurrentRevision {
			current = r.Name
		}
	}
	return current, res.Update.Name, collisions, nil
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

func selectorString(ud *appsv1alpha1.UnitedDeployment) string {
	sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}

// unsupportedStatus is ud's status when its subset kind is not served: SubsetProvisioned=False with msg.
func (c *Controller) unsupportedStatus(ud *appsv1alpha1.UnitedDeployment, msg string) appsv1alpha1.UnitedDeploymentStatus {
	st := *ud.Status.DeepCopy()
	st.ObservedGeneration = ud.Generation
	setCondition(&st, condition(appsv1alpha1.SubsetProvisioned, corev1.ConditionFalse, "Error", msg, metav1.NewTime(c.clock.Now())))
	return st
}

// writeStatus writes st unless ud already has it.
func (c *Controller) writeStatus(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, st appsv1alpha1.UnitedDeploymentStatus) error {
	if equality.Semantic.DeepEqual(ud.Status, st) {
		return nil
	}
	obj := ud.DeepCopy()
	obj.Status = st
	out, err := c.client.AppsV1alpha1().UnitedDeployments(ud.Namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of UnitedDeployment %s/%s: %w", ud.Namespace, ud.Name, err)
	}
	c.written.Expect(out)
	return nil
}
