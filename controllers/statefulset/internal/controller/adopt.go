package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// adoptOrphans makes the set the controller of pods without one that match
// its selector and carry its name pattern <set>-<ordinal>: what an apps/v1
// StatefulSet deleted with --cascade=orphan leaves behind when it is
// recreated as an Advanced StatefulSet. Without it the set could never
// create those ordinals (the names are taken). It returns true when it
// adopted a pod; the next sync, seeing the adoption in the cache, acts on it.
func (c *Controller) adoptOrphans(ctx context.Context, set *appsv1beta1.StatefulSet) (bool, error) {
	if set.DeletionTimestamp != nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		return false, nil // rejected at admission; never claim the whole namespace
	}
	objs, err := c.pods.ByIndex(controller.OrphanIndex, set.Namespace)
	if err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	adopted := false
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if metav1.GetControllerOfNoCopy(p) != nil || !podutil.IsActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if _, ok := ordinalOf(set.Name, p.Name); !ok {
			continue
		}
		if err := controller.AdoptPod(ctx, c.kube, p, *metav1.NewControllerRef(set, kindStatefulSet)); err != nil {
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
