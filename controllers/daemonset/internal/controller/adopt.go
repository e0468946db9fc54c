package controller

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// adoptOrphans makes ds the controller of the active orphan pods and the
// orphan ControllerRevisions its selector matches — what
// `kubectl delete ds --cascade=orphan` of an apps/v1 DaemonSet being
// migrated leaves, as upstream and OpenKruise adopt them. Adopting the old
// revisions matters: the one whose data equals the template is then re-used
// as the update revision, so its hash — the one the adopted pods carry —
// stays current and the pods are not rolled. It reports whether it adopted
// anything: the sync then waits for the cache to show it.
func (c *Controller) adoptOrphans(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	adoptedRevisions, err := c.adoptOrphanRevisions(ctx, ds, sel)
	if err != nil {
		return adoptedRevisions, err
	}
	adoptedPods, err := c.adoptOrphanPods(ctx, ds, sel)
	if err != nil {
		return adoptedRevisions || adoptedPods, err
	}
	released, err := c.releaseUnselected(ctx, ds, sel)
	return adoptedRevisions || adoptedPods || released, err
}

// releaseUnselected removes ds's controllerRef from the pods it controls
// whose labels its selector no longer matches (someone relabelled them to
// take them out, e.g. for debugging), as upstream's ClaimPods does: the
// pod keeps running, unmanaged, and its node gets a new daemon pod.
func (c *Controller) releaseUnselected(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	objs, err := controller.ByOwnerUID(c.pods, ds.UID)
	if err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	released := false
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || !metav1.IsControlledBy(p, ds) || p.DeletionTimestamp != nil || sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if err := controller.ReleasePod(ctx, c.kube, p, ds.UID); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue
			}
			return released, fmt.Errorf("release pod %s: %w", p.Name, err)
		}
		klog.FromContext(ctx).Info("Released pod the selector no longer matches", "pod", klog.KObj(p))
		released = true
	}
	return released, nil
}

func (c *Controller) adoptOrphanRevisions(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	objs, err := c.revIndexer.ByIndex(controller.OrphanIndex, ds.Namespace)
	if err != nil {
		return false, fmt.Errorf("list orphan revisions: %w", err)
	}
	ref, err := json.Marshal(metav1.NewControllerRef(ds, kindDaemonSet))
	if err != nil {
		return false, err
	}
	adopted := false
	for _, o := range objs {
		r, ok := o.(*appsv1.ControllerRevision)
		if !ok || r.DeletionTimestamp != nil || metav1.GetControllerOfNoCopy(r) != nil || !sel.Matches(labels.Set(r.Labels)) {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[%s],"uid":%q}}`, ref, r.UID)
		out, err := c.kube.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or adopted by someone else meanwhile
			}
			return adopted, fmt.Errorf("adopt revision %s: %w", r.Name, err)
		}
		c.rvExp.Expect(out)
		klog.FromContext(ctx).Info("Adopted orphan ControllerRevision", "revision", klog.KObj(r))
		adopted = true
	}
	return adopted, nil
}

func (c *Controller) adoptOrphanPods(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	objs, err := c.pods.ByIndex(controller.OrphanIndex, ds.Namespace)
	if err != nil {
		return false, fmt.Errorf("list orphan pods: %w", err)
	}
	adopted := false
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || metav1.GetControllerOfNoCopy(p) != nil || !podutil.IsActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if err := controller.AdoptPod(ctx, c.kube, p, *metav1.NewControllerRef(ds, kindDaemonSet)); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or adopted by someone else meanwhile
			}
			return adopted, fmt.Errorf("adopt pod %s: %w", p.Name, err)
		}
		klog.FromContext(ctx).Info("Adopted orphan pod", "pod", klog.KObj(p))
		adopted = true
	}
	return adopted, nil
}
