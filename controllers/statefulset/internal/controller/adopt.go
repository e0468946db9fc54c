package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// adoptOrphans makes the set the controller of pods without one that match
// its selector and carry its name pattern <set>-<ordinal>: what an apps/v1
// StatefulSet deleted with --cascade=orphan leaves behind when it is
// recreated as an Advanced StatefulSet. Without it the set could never
// create those ordinals (the names are taken). It returns true when it
// adopted a pod; the next sync, seeing the adoption in the cache, acts on it.
func (c *Controller) adoptOrphans(ctx context.Context, set *appsv1beta1.StatefulSet) (bool, error) {
	sel, ok := workload.Selector(set.Spec.Selector)
	if set.DeletionTimestamp != nil || !ok {
		return false, nil // an empty selector was rejected at admission; never claim the whole namespace
	}
	n, err := c.AdoptOrphans(ctx, set.Namespace, *metav1.NewControllerRef(set, kindStatefulSet), sel,
		func(p *corev1.Pod) bool { return isOrdinalOf(set, p) })
	return n > 0, err
}
