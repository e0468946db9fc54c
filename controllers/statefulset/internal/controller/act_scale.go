package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// scale creates missing pods (claims first), deletes failed ones so they
// are created again, and deletes condemned pods (through the preDelete
// hook), as planScale decides. It also keeps every claim's ownerReferences
// as the retention policy wants them. It returns true when it acted.
func (c *Controller) scale(ctx context.Context, st *syncState) (bool, error) {
	plan := planScale(scaleInput{
		slots:           st.slots,
		pods:            st.pods,
		monotonic:       st.set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement,
		maxUnavailable:  scaleMaxUnavailable(st.set, len(st.slots)),
		minReadySeconds: st.minReadySeconds,
		now:             st.now,
	})
	if plan.waitingFor != "" {
		klog.FromContext(ctx).V(4).Info("Waiting for pod to be healthy", "pod", plan.waitingFor)
		for _, p := range st.pods {
			if p.Name == plan.waitingFor {
				st.requeue.After(availableIn(p, st.minReadySeconds, st.now))
			}
		}
	}
	if err := c.syncClaimOwners(ctx, st); err != nil {
		return false, err
	}
	revs := c.revisionsForNewPods(st, plan.create)
	err := controller.ForEach(plan.create, writeConcurrency, func(o int) error { return c.createPod(ctx, st, o, revs[o]) })
	for _, p := range plan.recreate {
		err = errors.Join(err, c.deletePod(ctx, st, p, "recreate failed pod"))
	}
	for _, p := range plan.condemn {
		_, delErr := c.deleteWithHook(ctx, st, p, "condemned")
		err = errors.Join(err, delErr)
	}
	return !plan.empty(), err
}

// revisionsForNewPods picks the revision of each pod to create: the current
// revision for slots below the partition under RollingUpdate (with
// unorderedUpdate: while fewer than partition pods run it), the update
// revision otherwise.
func (c *Controller) revisionsForNewPods(st *syncState, ordinals []int) map[int]*appsv1.ControllerRevision {
	out := make(map[int]*appsv1.ControllerRevision, len(ordinals))
	us := st.set.Spec.UpdateStrategy
	partition := 0
	if us.Type != appsv1.OnDeleteStatefulSetStrategyType && us.RollingUpdate != nil {
		partition = int(ptr.Deref(us.RollingUpdate.Partition, 0))
	}
	unordered := us.RollingUpdate != nil && us.RollingUpdate.UnorderedUpdate != nil && st.set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	atCurrent := 0
	for _, p := range st.slotPods() {
		if !st.isUpdated(p) {
			atCurrent++
		}
	}
	for _, o := range ordinals {
		out[o] = st.Update
		switch {
		case unordered && atCurrent < partition:
			out[o] = st.Current
			atCurrent++
		case !unordered && slotIndex(st.slots, o) < partition:
			out[o] = st.Current
		}
	}
	return out
}

// createPod creates the claims the ordinal lacks, then its pod. A claim
// still owned by an earlier pod of the ordinal is about to be garbage
// collected: the pod waits for it to go.
func (c *Controller) createPod(ctx context.Context, st *syncState, ordinal int, rev *appsv1.ControllerRevision) error {
	tmpl, err := revision.Template(rev)
	if err != nil {
		return err
	}
	pod := newPod(st.set, rev, tmpl, ordinal, c.Gates.Enabled(features.PodIndexLabel))
	r := retentionOf(st.set, c.Gates.Enabled(features.StatefulSetAutoDeletePVC))
	for _, claim := range newClaims(st.set, ordinal) {
		existing, err := c.claim(st.set.Namespace, claim.Name)
		if err != nil {
			return err
		}
		if existing != nil {
			if staleClaim(existing, pod.Name, nil) {
				klog.FromContext(ctx).V(2).Info("Waiting for the claim of a deleted pod to be garbage collected", "claim", klog.KObj(existing))
				st.requeue.After(time.Second)
				return nil
			}
			continue
		}
		claim.OwnerReferences, _ = claimOwners(nil, st.set, nil, false, r)
		c.scaleExp.Expect(st.key, expectations.Create, claim.Name)
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			c.scaleExp.Observe(st.key, expectations.Create, claim.Name)
			if !apierrors.IsAlreadyExists(err) {
				c.Recorder.Eventf(st.set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v", claim.Name, pod.Name, st.set.Name, err)
				return fmt.Errorf("create claim %s: %w", claim.Name, err)
			}
		}
	}
	if _, err := c.PodControl.Create(ctx, pod, podcontrol.Scale(c.scaleExp, st.key)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // a namesake not yet in the cache (or not ours): the next sync sees it
		}
		c.Recorder.Eventf(st.set, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", pod.Name, st.set.Name, err)
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	c.Recorder.Eventf(st.set, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", pod.Name, st.set.Name)
	return nil
}

// claim returns the cached claim of that name, or nil.
func (c *Controller) claim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	obj, exists, err := c.claims.GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, err
	}
	return obj.(*corev1.PersistentVolumeClaim), nil
}

// syncClaimOwners gives the claims of every pod their ownerReferences under
// the retention policy, before any condemned pod is deleted.
func (c *Controller) syncClaimOwners(ctx context.Context, st *syncState) error {
	if len(st.set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	r := retentionOf(st.set, c.Gates.Enabled(features.StatefulSetAutoDeletePVC))
	for o, p := range st.pods {
		for _, vct := range st.set.Spec.VolumeClaimTemplates {
			claim, err := c.claim(st.set.Namespace, claimName(vct.Name, st.set.Name, o))
			if err != nil || claim == nil || claim.DeletionTimestamp != nil {
				if err != nil {
					return err
				}
				continue
			}
			refs, changed := claimOwners(claim.OwnerReferences, st.set, p, !isSlot(st.slots, o), r)
			if !changed {
				continue
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": claim.UID}})
			if err != nil {
				return err
			}
			if _, err := c.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("update owners of claim %s: %w", claim.Name, err)
			}
		}
	}
	return nil
}

// deleteWithHook deletes a pod, or moves it into PreparingDelete while a
// preDelete hook holds it. It returns true when it wrote something.
func (c *Controller) deleteWithHook(ctx context.Context, st *syncState, p *corev1.Pod, why string) (bool, error) {
	proceed, held, err := c.PreDelete(ctx, st.set, st.set.Spec.Lifecycle, p, st.now)
	if err != nil || !proceed {
		return held, err
	}
	return true, c.deletePod(ctx, st, p, why)
}

func (c *Controller) deletePod(ctx context.Context, st *syncState, p *corev1.Pod, why string) error {
	err := c.PodControl.Delete(ctx, p, podcontrol.Scale(c.scaleExp, st.key))
	if err != nil && !apierrors.IsNotFound(err) {
		c.Recorder.Eventf(st.set, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", p.Name, st.set.Name, err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted pod", "pod", klog.KObj(p), "reason", why)
	c.Recorder.Eventf(st.set, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", p.Name, st.set.Name)
	return nil
}
