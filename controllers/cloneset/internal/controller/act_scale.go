package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// scale brings the number of pods to replicas (plus the surge in use). It
// returns true when it wrote something; the caller then does not update in
// the same pass. Order (behaviour §1.1 Scale, docs/openkruise-behaviour.md): cancel PreparingDelete when
// replicas grew back, create, finish deletions already in PreparingDelete,
// specified deletes, then scale-in.
func (c *Controller) scale(ctx context.Context, st *syncState) (bool, error) {
	if done, err := c.cancelPreparingDelete(ctx, st); done || err != nil {
		return done, err
	}
	if st.cs.Spec.ScaleStrategy.DisablePVCReuse {
		if err := c.deleteUnusedPVCs(ctx, st); err != nil {
			return false, err
		}
	}
	d := calculateDiffs(st.diffInput())
	if d.scaleUp > 0 {
		if d.scaleUp > d.scaleUpLimit {
			c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "ScaleUpLimited",
				"scaleStrategy.maxUnavailable allows %d of %d pod creations while pods are unavailable", d.scaleUpLimit, d.scaleUp)
		}
		// A pass that is short of pods deletes nothing, even when
		// maxUnavailable lets it create none now (OpenKruise does the same):
		// deleting while the set is already short would only deepen the gap.
		if d.scaleUpLimit <= 0 {
			return false, nil
		}
		// At most burstReplicas per sync: the creations' expectations hold
		// the next sync until the cache shows them, and their pod events
		// bring it, so a huge replicas is reached batch by batch instead of
		// one sync holding a worker and every id at once.
		n := min(d.scaleUpLimit, burstReplicas)
		return true, c.createPods(ctx, st, n, min(d.scaleUpOld, n))
	}

	var preDelete, specified []*corev1.Pod
	for _, p := range st.pods {
		switch {
		case isPreparingDelete(p):
			preDelete = append(preDelete, p)
		case st.isSpecifiedDelete(p):
			specified = append(specified, p)
		}
	}
	if done, err := c.deletePods(ctx, st, preDelete); done || err != nil {
		return done, err
	}
	if len(specified) > 0 {
		return c.deletePods(ctx, st, limitAvailable(st, specified, d.deleteReadyLimit))
	}
	if d.scaleDown > 0 && len(preDelete) == 0 {
		return c.deletePods(ctx, st, c.choosePodsToDelete(st, d))
	}
	return false, nil
}

// cancelPreparingDelete returns scaled-in pods still waiting in
// PreparingDelete to PreparingNormal when replicas grew back (v1.3 seed).
// Specified deletes are never cancelled, and nothing is when a hook marks
// pods NotReady.
func (c *Controller) cancelPreparingDelete(ctx context.Context, st *syncState) (bool, error) {
	if lifecycle.MarksPodNotReady(st.cs.Spec.Lifecycle) {
		return false, nil
	}
	var candidates []*corev1.Pod
	staying := 0
	for _, p := range st.pods {
		switch {
		case isPreparingDelete(p) && !st.isSpecifiedDelete(p):
			candidates = append(candidates, p)
		case !isPreparingDelete(p) && !st.isSpecifiedDelete(p):
			staying++
		}
	}
	short := resolveLimits(&st.cs.Spec).replicas - staying
	wrote := false
	for _, p := range candidates {
		if short <= 0 {
			break
		}
		dec := lifecycle.Decide(st.cs.Spec.Lifecycle, p, lifecycle.Request{Op: lifecycle.OpCancelDelete}, st.now)
		if dec.Action != lifecycle.ActionPatch {
			continue
		}
		if err := c.WriteLifecycle(ctx, p, dec.Patch); err != nil {
			return wrote, err
		}
		klog.FromContext(ctx).Info("Cancelled deletion: replicas grew back", "pod", klog.KObj(p))
		c.Recorder.Eventf(st.cs, corev1.EventTypeNormal, "CancelledPreparingDelete", "pod %s is needed again and returns to PreparingNormal", p.Name)
		wrote = true
		short--
	}
	return wrote, nil
}

// createPods creates n pods in slow-start batches (1, 2, 4, …; at most
// createInFlight at once), stopping at the first batch with a failure; the
// first old of them at the current revision, the rest at the update
// revision. PVCs are created before their pod.
func (c *Controller) createPods(ctx context.Context, st *syncState, n, old int) error {
	all := st.all
	ids := availableIDs(n, all, st.pvcs, !st.cs.Spec.ScaleStrategy.DisablePVCReuse)
	if len(ids) < n {
		// Only when nearly every id of the space is taken (27^5 of them:
		// far more pods than a CloneSet may have, pub.MaxReplicas): the
		// sync creates what it found and says so; the next one tries again.
		c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "InstanceIDsExhausted",
			"found %d free instance ids of the %d needed: the id space of %d-character ids is nearly full", len(ids), n, instanceIDLength)
		klog.FromContext(ctx).Info("Instance ids nearly exhausted", "needed", n, "found", len(ids))
	}
	existing := sets.New[string]()
	for _, pvc := range st.pvcs {
		existing.Insert(pvc.Name)
	}
	type job struct {
		id  string
		rev *appsv1.ControllerRevision
	}
	jobs := make([]job, 0, n)
	for i, id := range ids {
		rev := st.Update
		if i < old {
			rev = st.Current
		}
		jobs = append(jobs, job{id: id, rev: rev})
	}
	if _, err := controller.SlowStart(len(jobs), createInFlight, func(i int) error {
		return c.createPod(ctx, st, jobs[i].id, jobs[i].rev, existing)
	}); err != nil {
		return fmt.Errorf("scale up: %w", err)
	}
	return nil
}

// createInFlight bounds the concurrent creations of one sync: enough to keep
// the API server busy, few enough to stay within API Priority and Fairness's
// queues (a slow-start batch of 1,024 sent at once drew hundreds of 429s; at
// 32 the creates themselves were the slowest step of a 2,000-pod scale-up,
// ~110 per second against kube-controller-manager's ~250; bench/RESULTS.md).
const createInFlight = 128

// burstReplicas bounds the pods one sync creates (kit/controller).
const burstReplicas = controller.MaxCreatesPerSync

func (c *Controller) createPod(ctx context.Context, st *syncState, id string, rev *appsv1.ControllerRevision, existingPVCs sets.Set[string]) error {
	tmpl, err := revision.Template(rev)
	if err != nil {
		return err
	}
	for _, pvc := range newPVCs(st.cs, id, existingPVCs) {
		c.scaleExp.Expect(st.key, expectations.Create, pvc.Name)
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			c.scaleExp.Observe(st.key, expectations.Create, pvc.Name)
			if !apierrors.IsAlreadyExists(err) {
				c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "FailedCreate", "failed to create pvc %s: %v", pvc.Name, err)
				return fmt.Errorf("create pvc %s: %w", pvc.Name, err)
			}
		}
	}
	pod := newPod(st.cs, rev, tmpl, id, st.shortHash)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[pub.LifecycleTimestampKey] = st.now.UTC().Format(time.RFC3339)
	if _, err := c.PodControl.Create(ctx, pod, podcontrol.Scale(c.scaleExp, st.key)); err != nil {
		c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "FailedCreate", "failed to create pod %s: %v", pod.Name, err)
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	c.Recorder.Eventf(st.cs, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod %s", pod.Name)
	return nil
}

// deletePods deletes pods, or moves those a preDelete hook holds into
// PreparingDelete, and deletes the PVCs of each deleted pod's instance. It
// returns true when it wrote something.
func (c *Controller) deletePods(ctx context.Context, st *syncState, pods []*corev1.Pod) (bool, error) {
	wrote := false
	for _, p := range pods {
		proceed, held, err := c.PreDelete(ctx, st.cs, st.cs.Spec.Lifecycle, p, st.now)
		if err != nil {
			return wrote, err
		}
		wrote = wrote || held
		if !proceed {
			continue
		}
		if err := c.deletePod(ctx, st, p); err != nil {
			return wrote, err
		}
		wrote = true
	}
	return wrote, nil
}

func (c *Controller) deletePod(ctx context.Context, st *syncState, p *corev1.Pod) error {
	err := c.PodControl.Delete(ctx, p, podcontrol.Scale(c.scaleExp, st.key))
	if err != nil && !apierrors.IsNotFound(err) {
		c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "FailedDelete", "failed to delete pod %s: %v", p.Name, err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	c.Recorder.Eventf(st.cs, corev1.EventTypeNormal, "SuccessfulDelete", "succeed to delete pod %s", p.Name)
	st.deleted.Insert(p.Name)
	c.deletedNames.add(st.key, p.Name)
	for _, pvc := range st.pvcs {
		if instanceID(pvc) != instanceID(p) || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := c.deletePVC(ctx, st, pvc); err != nil {
			return err
		}
	}
	return nil
}

// deleteUnusedPVCs (disablePVCReuse) deletes the PVCs of instances that no
// longer have a pod, so a replacement starts with fresh volumes.
func (c *Controller) deleteUnusedPVCs(ctx context.Context, st *syncState) error {
	all := st.all
	ids := sets.New[string]()
	for _, p := range all {
		ids.Insert(instanceID(p))
	}
	for _, pvc := range st.pvcs {
		if pvc.DeletionTimestamp == nil && !ids.Has(instanceID(pvc)) {
			if err := c.deletePVC(ctx, st, pvc); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Controller) deletePVC(ctx context.Context, st *syncState, pvc *corev1.PersistentVolumeClaim) error {
	c.scaleExp.Expect(st.key, expectations.Delete, pvc.Name)
	uid := pvc.UID
	err := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		c.scaleExp.Observe(st.key, expectations.Delete, pvc.Name)
		return fmt.Errorf("delete pvc %s: %w", pvc.Name, err)
	}
	return nil
}
