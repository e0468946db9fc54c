package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// ownedPVCs returns the cached PVCs the CloneSet controls. Read-only.
func (c *Controller) ownedPVCs(cs *appsv1alpha1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	pvcs, err := controller.Controlled[*corev1.PersistentVolumeClaim](c.pvcs, cs)
	if err != nil {
		return nil, fmt.Errorf("list PVCs: %w", err)
	}
	return pvcs, nil
}

// claimPods returns the CloneSet's pods after releasing those that no longer
// match its selector and adopting orphans (pods carrying the instance-id
// label, active, without a controller) that do. A CloneSet being deleted
// neither adopts nor releases, nor does one whose selector was rejected at
// admission (it must never claim the whole namespace).
func (c *Controller) claimPods(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*corev1.Pod, error) {
	owned, err := c.OwnedPods(cs)
	if err != nil {
		return nil, err
	}
	sel, ok := workload.Selector(cs.Spec.Selector)
	if cs.DeletionTimestamp != nil || !ok {
		return owned, nil
	}
	if owned, _, err = c.ReleaseUnselected(ctx, cs.UID, owned, sel, false); err != nil {
		return nil, err
	}
	adopted, err := c.AdoptOrphans(ctx, cs.Namespace, controllerRef(cs), sel, nil)
	if adopted > 0 {
		// Act on them from the next sync, when the cache shows the adoption.
		c.Queue.AddAfter(types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}, 0)
	}
	return owned, err
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
