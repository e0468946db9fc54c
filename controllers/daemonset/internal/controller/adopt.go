package controller

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
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
	owned, err := c.OwnedPods(ds)
	if err != nil {
		return false, err
	}
	_, released, err := c.ReleaseUnselected(ctx, ds.UID, owned, sel, true)
	return released > 0, err
}

func (c *Controller) adoptOrphanRevisions(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	objs, err := c.RevisionInformer.GetIndexer().ByIndex(controller.OrphanIndex, ds.Namespace)
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
		out, err := c.Kube.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or adopted by someone else meanwhile
			}
			return adopted, fmt.Errorf("adopt revision %s: %w", r.Name, err)
		}
		c.RV.Expect(out)
		klog.FromContext(ctx).Info("Adopted orphan ControllerRevision", "revision", klog.KObj(r))
		adopted = true
	}
	return adopted, nil
}

func (c *Controller) adoptOrphanPods(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
	n, err := c.AdoptOrphans(ctx, ds.Namespace, *metav1.NewControllerRef(ds, kindDaemonSet), sel, nil)
	return n > 0, err
}
