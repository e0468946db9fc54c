package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// deletionDelay: a pod that started terminating is looked at again 5s later
// (OpenKruise's delay), when it is usually gone.
const deletionDelay = 5 * time.Second

// podHandler maps pod events to budgets. A pod marked with the related-pub
// annotation maps to that budget by one map lookup; an unmarked pod (new,
// or created before its budget) is offered to the budgets of its own
// namespace only, and only on add or when its labels or owners change —
// in a namespace without budgets that is one index lookup. Updates of
// marked pods enqueue only when availability changes or deletion starts
// (OpenKruise #1027; behaviour §2.8, docs/openkruise-behaviour.md).
type podHandler struct{ c *Controller }

func (h podHandler) OnAdd(obj any, isInInitialList bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, key := range h.c.budgetsOf(pod) {
		h.c.Queue.EnqueueEvent(key, isInInitialList)
	}
}

// budgetsOf: the budget a pod is marked for, if it exists; else (unmarked,
// or marked for a budget that is gone) the budgets that may cover it, so
// that one of them marks it.
func (c *Controller) budgetsOf(pod *corev1.Pod) []types.NamespacedName {
	if name := pubcontrol.RelatedPub(pod); name != "" && c.exists(pod.Namespace, name) {
		return []types.NamespacedName{{Namespace: pod.Namespace, Name: name}}
	}
	return c.candidates(pod)
}

func (c *Controller) exists(ns, name string) bool {
	p, err := c.pubs.PodUnavailableBudgets(ns).Get(name)
	return err == nil && p.DeletionTimestamp == nil
}

func (h podHandler) OnUpdate(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	newPod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	name := pubcontrol.RelatedPub(newPod)
	moved := !labels.Equals(oldPod.Labels, newPod.Labels) || !ownersEqual(oldPod, newPod)
	if name == "" || !h.c.exists(newPod.Namespace, name) {
		if moved || name != pubcontrol.RelatedPub(oldPod) {
			for _, key := range h.c.candidates(newPod) {
				h.c.Queue.Enqueue(key)
			}
		}
		return
	}
	key := types.NamespacedName{Namespace: newPod.Namespace, Name: name}
	if moved {
		// Relabelled or re-owned: another budget may now cover it (and
		// re-mark it); if the cheap test says its own no longer does, that
		// one recounts.
		for _, k := range h.c.candidates(newPod) {
			if k != key {
				h.c.Queue.Enqueue(k)
			}
		}
		if p, err := h.c.pubs.PodUnavailableBudgets(key.Namespace).Get(key.Name); err == nil && !Covers(p, newPod, metav1.GetControllerOfNoCopy(newPod)) {
			h.c.Queue.Enqueue(key)
		}
	}
	switch {
	case oldPod.DeletionTimestamp == nil && newPod.DeletionTimestamp != nil:
		h.c.Queue.AddAfter(key, deletionDelay)
	case oldPod.DeletionTimestamp != nil:
	case pubcontrol.Available(oldPod) != pubcontrol.Available(newPod):
		h.c.Queue.Enqueue(key)
	}
}

func (h podHandler) OnDelete(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	if name := pubcontrol.RelatedPub(o); name != "" {
		h.c.Queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: name})
	}
}

func ownersEqual(a, b *corev1.Pod) bool {
	ra, rb := metav1.GetControllerOfNoCopy(a), metav1.GetControllerOfNoCopy(b)
	return (ra == nil) == (rb == nil) && (ra == nil || ra.UID == rb.UID)
}

// candidates are the budgets of the pod's namespace that may cover an
// unmarked pod: a selector matching its labels, or a targetRef of the kind
// of its controller (a ReplicaSet's pods for a Deployment).
func (c *Controller) candidates(pod *corev1.Pod) []types.NamespacedName {
	pubs, err := c.pubs.PodUnavailableBudgets(pod.Namespace).List(labels.Everything())
	if err != nil || len(pubs) == 0 {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	var out []types.NamespacedName
	for _, p := range pubs {
		if Covers(p, pod, ref) {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

// Covers is the handler's cheap test (no API call) that p may protect pod.
func Covers(p *policyv1alpha1.PodUnavailableBudget, pod *corev1.Pod, ref *metav1.OwnerReference) bool {
	if t := p.Spec.TargetReference; t != nil {
		return ref != nil && (ref.Kind == t.Kind || (ref.Kind == "ReplicaSet" && t.Kind == "Deployment"))
	}
	return controller.SelectorMatches(p.Spec.Selector, pod.Labels)
}

// pubHandler enqueues the budget on every event and, when one is deleted
// or starts terminating, the other budgets of its namespace: pods marked
// for it may be covered by another budget, which must re-mark them (a
// budget recreated under a new name, or two budgets over one pod), not
// wait for the next resync.
type pubHandler struct{ c *Controller }

func (h pubHandler) OnAdd(obj any, _ bool) {
	if p, ok := obj.(*policyv1alpha1.PodUnavailableBudget); ok {
		h.c.Queue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
}

func (h pubHandler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*policyv1alpha1.PodUnavailableBudget)
	p, ok2 := newObj.(*policyv1alpha1.PodUnavailableBudget)
	if !ok1 || !ok2 {
		return
	}
	h.c.Queue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	if o.DeletionTimestamp == nil && p.DeletionTimestamp != nil {
		h.others(p)
	}
}

func (h pubHandler) OnDelete(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	h.c.Queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	h.others(o)
}

func (h pubHandler) others(gone metav1.Object) {
	pubs, err := h.c.pubs.PodUnavailableBudgets(gone.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pubs {
		if p.Name != gone.GetName() {
			h.c.Queue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
}

// workloadHandler enqueues the budgets of a workload's namespace when its
// replicas change or it goes away: the expected count moves.
type workloadHandler struct{ c *Controller }

func (h workloadHandler) OnAdd(obj any, isInInitialList bool) {
	if !isInInitialList {
		h.enqueueNamespace(obj)
	}
}

func (h workloadHandler) OnUpdate(oldObj, newObj any) {
	if replicas(oldObj) != replicas(newObj) {
		h.enqueueNamespace(newObj)
	}
}

func (h workloadHandler) OnDelete(obj any) { h.enqueueNamespace(obj) }

func (h workloadHandler) enqueueNamespace(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	pubs, err := h.c.pubs.PodUnavailableBudgets(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pubs {
		h.c.Queue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
}

func replicas(obj any) int32 {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return ptr.Deref(w.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		return ptr.Deref(w.Spec.Replicas, 1)
	case *appsv1alpha1.CloneSet:
		return ptr.Deref(w.Spec.Replicas, 1)
	case *appsv1beta1.StatefulSet:
		return ptr.Deref(w.Spec.Replicas, 1)
	}
	return -1
}
