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
// (OpenKruise #1027, reference §2.8).
type podHandler struct{ c *Controller }

func (h podHandler) OnAdd(obj any, isInInitialList bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if name := pubcontrol.RelatedPub(pod); name != "" {
		h.c.queue.EnqueueEvent(types.NamespacedName{Namespace: pod.Namespace, Name: name}, isInInitialList)
		return
	}
	for _, key := range h.c.candidates(pod) {
		h.c.queue.EnqueueEvent(key, isInInitialList)
	}
}

func (h podHandler) OnUpdate(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	newPod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	name := pubcontrol.RelatedPub(newPod)
	if name == "" {
		if !labels.Equals(oldPod.Labels, newPod.Labels) || !ownersEqual(oldPod, newPod) {
			for _, key := range h.c.candidates(newPod) {
				h.c.queue.Enqueue(key)
			}
		}
		return
	}
	key := types.NamespacedName{Namespace: newPod.Namespace, Name: name}
	switch {
	case oldPod.DeletionTimestamp == nil && newPod.DeletionTimestamp != nil:
		h.c.queue.AddAfter(key, deletionDelay)
	case oldPod.DeletionTimestamp != nil:
	case pubcontrol.Available(oldPod) != pubcontrol.Available(newPod):
		h.c.queue.Enqueue(key)
	}
}

func (h podHandler) OnDelete(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	if name := pubcontrol.RelatedPub(o); name != "" {
		h.c.queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: name})
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
		h.c.queue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
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
