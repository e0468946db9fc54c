package controller

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
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

// sync reconciles one UnitedDeployment: gather (subset workloads, revisions) → decide (duplicates, split,
// partitions) → act (delete, create, update workloads) → status → revision history.
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
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("unitedDeployment", klog.KObj(ud)))

	kind := TemplateKind(ud)
	w := c.kinds[kind]
	if w == nil {
		return c.reportUnsupported(ctx, ud, kind)
	}
	// Expectations before the subset list: a created subset stored by the informer between the two reads would
	// otherwise be in neither, and be created twice.
	pending, pendingWait := c.creates.Pending(key, ud.UID, func(created string) bool { return c.createSettled(ud.Namespace, kind, created) })
	all, err := c.allSubsets(ud)
	if err != nil || c.ownWritesPending(key, ud, all) {
		return err
	}
	revs, err := c.resolveRevisions(ctx, ud)
	if err != nil {
		c.Recorder.Event(ud, corev1.EventTypeWarning, reasonFailedRevision, err.Error())
		return err
	}

	subsets, stale := Classify(ud, kind, all)
	if err := c.deleteAll(ctx, stale); err != nil {
		c.Recorder.Event(ud, corev1.EventTypeWarning, reasonFailedDuplicates, err.Error())
		return err
	}
	plan, err := planSubsets(ud, subsets, c.subsetPods, c.Clock.Now())
	if err != nil {
		// The API server's rules reject such a spec; it can only be one admitted before them. Retrying changes nothing.
		c.Recorder.Eventf(ud, corev1.EventTypeWarning, reasonFailedReplicas, "Specified subset replicas is ineffective: %s", err.Error())
		return kitcontroller.Permanent(err)
	}

	res := c.syncSubsets(ctx, ud, w, subsets, plan, revs.update, pending)

	st := CalculateStatus(ud, c.statusInput(ud, subsets, plan, revs, res))
	if err := c.writeStatus(ctx, ud, st); err != nil {
		return err
	}
	c.truncateRevisions(ctx, ud, st)
	var requeue kitcontroller.Requeue
	requeue.After(plan.recheck)
	requeue.After(pendingWait)
	if d := requeue.Earliest(); d > 0 {
		c.Queue.AddAfter(key, d)
	}
	return errors.Join(res.provisionErr, res.updateErr)
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

// ownWritesPending reports whether our own last write to ud or one of its workloads is not in the cache yet; it
// then requeues ud for when it should be.
func (c *Controller) ownWritesPending(key types.NamespacedName, ud *appsv1alpha1.UnitedDeployment, all []Observed) bool {
	objs := []metav1.Object{ud}
	for _, o := range all {
		objs = append(objs, o.Obj)
	}
	if wait := c.written.Wait(objs...); wait > 0 {
		c.Queue.AddAfter(key, wait) // our own last write is not in the cache yet
		return true
	}
	return false
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

// statusInput gathers what the status reports: the sync's decisions and outcomes, and the updated pods of each
// subset of the topology, read from the cache after the writes.
func (c *Controller) statusInput(ud *appsv1alpha1.UnitedDeployment, subsets map[string]Observed, plan subsetPlan,
	revs revisionNames, res subsetsResult) StatusInput {
	in := StatusInput{
		Subsets: map[string]Observed{}, Pods: map[string]PodCounts{}, NextReplicas: plan.replicas, NextPartitions: plan.partitions,
		CurrentRevision: revs.current, UpdateRevision: revs.update, CollisionCount: revs.collisions, Selector: selectorString(ud),
		Provisioned: res.provisioned, ProvisionErr: res.provisionErr, UpdateErr: res.updateErr, Now: metav1.NewTime(c.Clock.Now()),
		SubsetConditions: plan.conditions,
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if o, ok := subsets[s.Name]; ok {
			in.Subsets[s.Name] = o
			in.Pods[s.Name] = CountUpdated(c.subsetPods(o), revs.update)
		}
	}
	return in
}
