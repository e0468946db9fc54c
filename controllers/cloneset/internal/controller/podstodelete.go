package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// missingPodsToDelete returns the names in spec.scaleStrategy.podsToDelete
// that no pod of the CloneSet has (never existed, or already gone).
func (st *syncState) missingPodsToDelete(pods []*corev1.Pod) []string {
	if len(st.cs.Spec.ScaleStrategy.PodsToDelete) == 0 {
		return nil
	}
	names := sets.New[string]()
	for _, p := range pods {
		names.Insert(p.Name)
	}
	var out []string
	for _, n := range st.cs.Spec.ScaleStrategy.PodsToDelete {
		if !names.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// truncatePodsToDelete removes from spec.scaleStrategy.podsToDelete the
// names of the pods this sync deleted and the names no pod of the CloneSet
// has, so the list only holds pending work (as OpenKruise trims it). Only the
// latter get a Warning event (and the FailedScale condition, see
// calculateStatus): OpenKruise rejects them at admission, which needs a
// webhook Flotilla's CloneSet does without.
func (c *Controller) truncatePodsToDelete(ctx context.Context, st *syncState) error {
	missing := st.missingPodsToDelete(c.allPods(st.cs))
	if len(missing) == 0 && st.deleted.Len() == 0 {
		return nil
	}
	drop := sets.New(missing...).Union(st.deleted)
	cp := st.cs.DeepCopy()
	cp.Spec.ScaleStrategy.PodsToDelete = slices.DeleteFunc(cp.Spec.ScaleStrategy.PodsToDelete, drop.Has)
	if len(cp.Spec.ScaleStrategy.PodsToDelete) == len(st.cs.Spec.ScaleStrategy.PodsToDelete) {
		return nil
	}
	if len(cp.Spec.ScaleStrategy.PodsToDelete) == 0 {
		cp.Spec.ScaleStrategy.PodsToDelete = nil
	}
	if len(missing) > 0 {
		c.recorder.Eventf(st.cs, corev1.EventTypeWarning, ReasonPodsToDeleteNotFound,
			"spec.scaleStrategy.podsToDelete names pods this CloneSet does not have (%v); removed them from the list", missing)
	}
	if _, err := c.client.AppsV1alpha1().CloneSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("trim podsToDelete: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Trimmed podsToDelete", "missing", missing, "deleted", sets.List(st.deleted))
	return nil
}
