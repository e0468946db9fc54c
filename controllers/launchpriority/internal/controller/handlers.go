package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// addHandlers maps events to pod keys: a pod in scope (added or updated) is enqueued; a deleted pod's
// expectations are dropped (its barrier goes with it by garbage collection); a barrier's add or update
// enqueues the pod owning it, which ends the wait of a sync that found the cache behind our own write.
func (c *Controller) addHandlers(pods, barriers cache.SharedIndexInformer) error {
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { c.enqueuePod(obj, initial) },
		UpdateFunc: func(_, obj any) { c.enqueuePod(obj, false) },
		DeleteFunc: func(obj any) {
			if o, ok := controller.ObjectOf(obj); ok {
				c.written.Delete(o.GetUID())
				c.creates.Delete(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
			}
		},
	}); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	if _, err := barriers.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.barrierAdded,
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: func(obj any) {
			if o, ok := controller.ObjectOf(obj); ok {
				c.written.Delete(o.GetUID())
			}
		},
	}); err != nil {
		return fmt.Errorf("watch barrier ConfigMaps: %w", err)
	}
	return nil
}

func (c *Controller) enqueuePod(obj any, initial bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !barrier.InScope(p) {
		return
	}
	c.Queue.EnqueueEvent(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, initial)
}

// barrierAdded settles the create expectation of the barrier's pod, now that the cache shows the barrier, and
// enqueues the pod.
func (c *Controller) barrierAdded(obj any) {
	if o, ok := controller.ObjectOf(obj); ok {
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "Pod" && ref.APIVersion == "v1" {
				c.creates.Observe(types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, expectations.Create, o.GetName())
			}
		}
	}
	c.enqueueOwner(obj)
}

// enqueueOwner enqueues the pod a barrier ConfigMap belongs to.
func (c *Controller) enqueueOwner(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Pod" && ref.APIVersion == "v1" {
			c.Queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name})
		}
	}
}
