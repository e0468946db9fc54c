package controller

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// generationAnnotations are the StatefulSet annotations the generated
// PersistentPodState is computed from.
var generationAnnotations = []string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState,
	appsv1alpha1.AnnotationRequiredPersistentTopology, appsv1alpha1.AnnotationPreferredPersistentTopology,
	appsv1alpha1.AnnotationPersistentPodAnnotations}

// addHandlers maps events to keys:
//   - a PersistentPodState's add, update (resyncs aside) and delete enqueue it;
//   - a pod of a StatefulSet enqueues the PersistentPodState targeting that
//     StatefulSet when it is added, deleted, or changes readiness, node or
//     deletion (what records follow);
//   - a StatefulSet of either kind enqueues its generated PersistentPodState
//     (a generate key) when created with, or changing, the generation
//     annotations, and the PersistentPodState targeting it when created,
//     deleted, being deleted, or changing replicas or reserved ordinals.
func (c *Controller) addHandlers(states, pods, sets, asts cache.SharedIndexInformer) error {
	if _, err := states.AddEventHandler(controller.OnChange(c.enqueueState)); err != nil {
		return fmt.Errorf("watch PersistentPodStates: %w", err)
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueForPod(obj) },
		UpdateFunc: func(o, n any) {
			op, ok1 := o.(*corev1.Pod)
			np, ok2 := n.(*corev1.Pod)
			if ok1 && ok2 && (podutil.IsReady(op) != podutil.IsReady(np) || op.Spec.NodeName != np.Spec.NodeName ||
				(op.DeletionTimestamp == nil) != (np.DeletionTimestamp == nil)) {
				c.enqueueForPod(n)
			}
		},
		DeleteFunc: func(obj any) { c.enqueueForPod(obj) },
	}); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	for group, inf := range map[string]cache.SharedIndexInformer{topology.GroupApps: sets, topology.GroupKruise: asts} {
		if _, err := inf.AddEventHandler(c.workloadHandler(group)); err != nil {
			return fmt.Errorf("watch %s StatefulSets: %w", group, err)
		}
	}
	return nil
}

func (c *Controller) enqueueState(obj any) {
	if o, ok := controller.ObjectOf(obj); ok {
		c.Queue.Enqueue(Key{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
}

func (c *Controller) enqueueForPod(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	if t, ok := topology.OfPod(o); ok {
		c.enqueueTarget(t)
	}
}

// enqueueTarget enqueues the PersistentPodState targeting t, if any.
func (c *Controller) enqueueTarget(t topology.Target) {
	if pps, err := topology.StateFor(c.statesIx, t); err == nil && pps != nil {
		c.Queue.Enqueue(Key{Namespace: pps.Namespace, Name: pps.Name})
	}
}

// workloadHandler handles the StatefulSets of group.
func (c *Controller) workloadHandler(group string) cache.ResourceEventHandler {
	target := func(o metav1.Object) topology.Target {
		return topology.Target{Namespace: o.GetNamespace(), Group: group, Name: o.GetName()}
	}
	generate := func(o metav1.Object) {
		c.Queue.Enqueue(Key{Namespace: o.GetNamespace(), Name: o.GetName(), Generate: group})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o, ok := controller.ObjectOf(obj)
			if !ok {
				return
			}
			// A generated object whose StatefulSet lost the annotation while
			// no replica ran is deleted too: a StatefulSet with a
			// PersistentPodState of its name is looked at.
			if o.GetAnnotations()[appsv1alpha1.AnnotationAutoGeneratePersistentPodState] == "true" || c.hasState(o) {
				generate(o)
			}
			c.enqueueTarget(target(o))
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := controller.ObjectOf(oldObj)
			n, ok2 := controller.ObjectOf(newObj)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			if slices.ContainsFunc(generationAnnotations, func(k string) bool { return o.GetAnnotations()[k] != n.GetAnnotations()[k] }) {
				generate(n)
			}
			if scaleChanged(oldObj, newObj) || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) {
				c.enqueueTarget(target(n))
			}
		},
		DeleteFunc: func(obj any) {
			if o, ok := controller.ObjectOf(obj); ok {
				c.enqueueTarget(target(o))
			}
		},
	}
}

func (c *Controller) hasState(o metav1.Object) bool {
	_, err := c.states.PersistentPodStates(o.GetNamespace()).Get(o.GetName())
	return err == nil
}

// scaleChanged reports whether replicas or reserved ordinals changed.
func scaleChanged(oldObj, newObj any) bool {
	switch o := oldObj.(type) {
	case *appsv1.StatefulSet:
		n, ok := newObj.(*appsv1.StatefulSet)
		return !ok || !equalReplicas(o.Spec.Replicas, n.Spec.Replicas)
	case *appsv1beta1.StatefulSet:
		n, ok := newObj.(*appsv1beta1.StatefulSet)
		return !ok || !equalReplicas(o.Spec.Replicas, n.Spec.Replicas) || !slices.Equal(o.Spec.ReserveOrdinals, n.Spec.ReserveOrdinals)
	}
	return true
}

func equalReplicas(a, b *int32) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
