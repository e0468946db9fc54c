package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// adoptOrphans makes ds the controller of the active orphan pods its
// selector matches (e.g. left by `kubectl delete ds --cascade=orphan` of an
// apps/v1 DaemonSet being migrated). It reports whether it adopted any: the
// sync then waits for the cache to show them.
func (c *Controller) adoptOrphans(ctx context.Context, ds *appsv1alpha1.DaemonSet, sel labels.Selector) (bool, error) {
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
