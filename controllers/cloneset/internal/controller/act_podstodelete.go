package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// deletedNames remembers, per CloneSet, the pods this process deleted whose
// names may still be listed in podsToDelete, so that trimming them later
// (after a failed write, or once a terminating pod is gone) is not mistaken
// for a name that never matched a pod.
type deletedNames struct {
	mu    sync.Mutex
	names map[types.NamespacedName]sets.Set[string]
}

func (d *deletedNames) add(key types.NamespacedName, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		d.names = map[types.NamespacedName]sets.Set[string]{}
	}
	if d.names[key] == nil {
		d.names[key] = sets.New[string]()
	}
	d.names[key].Insert(name)
}

func (d *deletedNames) get(key types.NamespacedName) sets.Set[string] {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.names[key].Clone()
}

func (d *deletedNames) forget(key types.NamespacedName, names sets.Set[string]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.names[key]; s != nil {
		s.Delete(sets.List(names)...)
		if s.Len() == 0 {
			delete(d.names, key)
		}
	}
}

func (d *deletedNames) drop(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.names, key)
}

// truncatePodsToDelete removes from spec.scaleStrategy.podsToDelete the
// names of the pods this sync deleted and the names no pod of the CloneSet
// has, so the list only holds pending work (as OpenKruise trims it). Only the
// latter get a Warning event (and the FailedScale condition, see
// calculateStatus): OpenKruise rejects them at admission, which needs a
// webhook Flotilla's CloneSet does without.
func (c *Controller) truncatePodsToDelete(ctx context.Context, st *syncState) error {
	all := st.all
	missing := st.missingPodsToDelete(all)
	drop := sets.New(missing...)
	for _, n := range st.cs.Spec.ScaleStrategy.PodsToDelete {
		if st.deleted.Has(n) && !slices.ContainsFunc(all, func(p *corev1.Pod) bool { return p.Name == n && p.DeletionTimestamp == nil }) {
			drop.Insert(n)
		}
	}
	if drop.Len() == 0 {
		return nil
	}
	cp := st.cs.DeepCopy()
	cp.Spec.ScaleStrategy.PodsToDelete = slices.DeleteFunc(cp.Spec.ScaleStrategy.PodsToDelete, drop.Has)
	if len(cp.Spec.ScaleStrategy.PodsToDelete) == len(st.cs.Spec.ScaleStrategy.PodsToDelete) {
		return nil
	}
	if len(cp.Spec.ScaleStrategy.PodsToDelete) == 0 {
		cp.Spec.ScaleStrategy.PodsToDelete = nil
	}
	if len(missing) > 0 {
		c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, ReasonPodsToDeleteNotFound,
			"spec.scaleStrategy.podsToDelete names pods this CloneSet does not have (%v); removed them from the list", missing)
	}
	out, err := c.client.AppsV1alpha1().CloneSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("trim podsToDelete: %w", err)
	}
	c.RV.Expect(out)
	c.deletedNames.forget(st.key, drop)
	klog.FromContext(ctx).V(2).Info("Trimmed podsToDelete", "missing", missing, "deleted", sets.List(st.deleted))
	return nil
}
