package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// podControl is PodControl, or one over Kube when it is not set (a Base
// built by hand in a test).
func (b *Base) podControl() podcontrol.PodControl {
	if b.PodControl != nil {
		return b.PodControl
	}
	return podclient.New(b.Kube)
}

// Adopters returns the FindOwners of a dependent handler: for an orphan pod,
// the workloads in its namespace (list) whose selector matches its labels
// and that accept it (nil: every one) — the ones that may adopt it.
func Adopters[O metav1.Object](kind string, list func(namespace string) ([]O, error), selector func(O) *metav1.LabelSelector,
	accept func(owner O, pod metav1.Object) bool) func(metav1.Object) []types.NamespacedName {
	return func(o metav1.Object) []types.NamespacedName {
		if _, isPod := o.(*corev1.Pod); !isPod {
			return nil
		}
		owners, err := list(o.GetNamespace())
		if err != nil {
			// An event handler has no caller to return to; the orphan waits
			// for its next event or the workloads' next sync.
			utilruntime.HandleError(fmt.Errorf("find the %ss that may adopt pod %s/%s: %w", kind, o.GetNamespace(), o.GetName(), err))
			return nil
		}
		var out []types.NamespacedName
		for _, w := range owners {
			if controller.SelectorMatches(selector(w), o.GetLabels()) && (accept == nil || accept(w, o)) {
				out = append(out, types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()})
			}
		}
		return out
	}
}

// Selector parses a workload's selector; ok is false for one that does not
// parse or selects everything (admission rejects both): such a workload
// must never claim the whole namespace.
func Selector(s *metav1.LabelSelector) (sel labels.Selector, ok bool) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return nil, false
	}
	return sel, true
}

// AdoptOrphans makes ref the controller of the active orphan pods in
// namespace that sel matches and accept (nil: every one) accepts. A pod gone
// or adopted by someone else meanwhile is skipped. It returns how many it
// adopted: the sync acts on them once the cache shows the adoption.
func (b *Base) AdoptOrphans(ctx context.Context, namespace string, ref metav1.OwnerReference, sel labels.Selector, accept func(*corev1.Pod) bool) (int, error) {
	objs, err := b.Pods.ByIndex(controller.OrphanIndex, namespace)
	if err != nil {
		return 0, fmt.Errorf("list orphan pods: %w", err)
	}
	adopted := 0
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || metav1.GetControllerOfNoCopy(p) != nil || !podutil.IsActive(p) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if accept != nil && !accept(p) {
			continue
		}
		if _, err := b.podControl().Adopt(ctx, p, ref); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or adopted by someone else meanwhile
			}
			return adopted, fmt.Errorf("adopt pod %s: %w", p.Name, err)
		}
		klog.FromContext(ctx).Info("Adopted orphan pod", "pod", klog.KObj(p))
		adopted++
	}
	return adopted, nil
}

// ReleaseUnselected removes owner's controllerRef from those of pods (owner's)
// that sel no longer matches — someone relabelled them to take them out:
// each keeps running, unmanaged. Terminating pods are left alone when
// skipTerminating. It returns the pods still selected and how many it
// released.
func (b *Base) ReleaseUnselected(ctx context.Context, owner types.UID, pods []*corev1.Pod, sel labels.Selector, skipTerminating bool) ([]*corev1.Pod, int, error) {
	kept := pods[:0:0]
	released := 0
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) || (skipTerminating && p.DeletionTimestamp != nil) {
			kept = append(kept, p)
			continue
		}
		if _, err := b.podControl().Release(ctx, p, owner); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				continue // gone, or no longer ours
			}
			return nil, released, fmt.Errorf("release pod %s: %w", p.Name, err)
		}
		klog.FromContext(ctx).Info("Released pod the selector no longer matches", "pod", klog.KObj(p))
		released++
	}
	return kept, released, nil
}
