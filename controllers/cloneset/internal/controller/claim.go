package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// allPods returns every cached pod the CloneSet controls, terminating ones
// included. Read-only.
func (c *Controller) allPods(cs *appsv1alpha1.CloneSet) ([]*corev1.Pod, error) {
	objs, err := controller.ByOwnerUID(c.pods, cs.UID)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && metav1.IsControlledBy(p, cs) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ownedPVCs returns the cached PVCs the CloneSet controls. Read-only.
func (c *Controller) ownedPVCs(cs *appsv1alpha1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	objs, err := controller.ByOwnerUID(c.pvcs, cs.UID)
	if err != nil {
		return nil, fmt.Errorf("list PVCs: %w", err)
	}
	out := make([]*corev1.PersistentVolumeClaim, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.PersistentVolumeClaim); ok && metav1.IsControlledBy(p, cs) {
			out = append(out, p)
		}
	}
	return out, nil
}

// claimPods returns the CloneSet's pods after releasing those that no longer
// match its selector and adopting orphans (pods carrying the instance-id
// label, active, without a controller) that do. A CloneSet being deleted
// neither adopts nor releases.
func (c *Controller) claimPods(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*corev1.Pod, error) {
	owned, err := c.allPods(cs)
	if err != nil {
		return nil, err
	}
	if cs.DeletionTimestamp != nil {
		return owned, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	if err != nil || sel.Empty() {
		// Rejected at admission; never claim the whole namespace.
		return owned, nil
	}
	logger := klog.FromContext(ctx)
	out := owned[:0:0]
	for _, p := range owned {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
			continue
		}
		if err := controller.ReleasePod(ctx, c.kube, p, cs.UID); err != nil {
			return nil, fmt.Errorf("release pod %s: %w", p.Name, err)
		}
		logger.Info("Released pod that no longer matches the selector", "pod", klog.KObj(p))
	}
	objs, err := c.pods.ByIndex(controller.OrphanIndex, cs.Namespace)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	ref := controllerRef(cs)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if metav1.GetControllerOfNoCopy(p) != nil || !podutil.IsActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if err := controller.AdoptPod(ctx, c.kube, p, ref); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or adopted by someone else meanwhile
			}
			return nil, fmt.Errorf("adopt pod %s: %w", p.Name, err)
		}
		logger.Info("Adopted orphan pod", "pod", klog.KObj(p))
		// Act on it from the next sync, when the cache shows the adoption.
		c.queue.AddAfter(types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}, 0)
	}
	return out, nil
}

// controllerRef is the ownerReference pods, PVCs and revisions carry.
func controllerRef(cs *appsv1alpha1.CloneSet) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         appsv1alpha1.SchemeGroupVersion.String(),
		Kind:               "CloneSet",
		Name:               cs.Name,
		UID:                cs.UID,
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

// instanceID returns the pod's or PVC's CloneSet instance id.
func instanceID(o metav1.Object) string { return o.GetLabels()[pub.CloneSetInstanceID] }
