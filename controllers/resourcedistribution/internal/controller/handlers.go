package controller

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// addHandlers maps informer events to ResourceDistribution keys:
//   - a distribution's add, update (resyncs aside) and delete enqueue it at once. OpenKruise ignores
//     status-only updates; here they also end the wait of a sync that found the cache behind our own status
//     write (sync skips a distribution until the cache shows that write, instead of failing on a conflict);
//   - a namespace created, deleted, or whose labels or terminating state change enqueues every distribution
//     it matches before or after (a namespace event names no distribution, so each is tested against the
//     cached distributions: cheap, there are few);
//   - a copy's add, update or delete enqueues its controlling distribution (an edited or deleted copy is
//     restored).
func (c *Controller) addHandlers(rds, nss, secrets, configMaps cache.SharedIndexInformer) error {
	onRD := controller.OnChange(c.enqueueRD)
	onRD.DeleteFunc = func(obj any) {
		if o, ok := controller.ObjectOf(obj); ok {
			c.written.Delete(o.GetUID())
			c.forget(o.GetName())
		}
		c.enqueueRD(obj)
	}
	if _, err := rds.AddEventHandler(onRD); err != nil {
		return fmt.Errorf("watch ResourceDistributions: %w", err)
	}
	if _, err := nss.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueForNamespaces(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Namespace)
			n, ok2 := newObj.(*corev1.Namespace)
			if ok1 && ok2 && maps.Equal(o.Labels, n.Labels) && terminating(o) == terminating(n) {
				return
			}
			c.enqueueForNamespaces(oldObj, newObj)
		},
		DeleteFunc: func(obj any) { c.enqueueForNamespaces(obj) },
	}); err != nil {
		return fmt.Errorf("watch Namespaces: %w", err)
	}
	for what, inf := range map[string]cache.SharedIndexInformer{"Secrets": secrets, "ConfigMaps": configMaps} {
		if _, err := inf.AddEventHandler(controller.NewOwnerHandler(ownerKind, c.Queue, nil)); err != nil {
			return fmt.Errorf("watch %s: %w", what, err)
		}
	}
	return nil
}

func terminating(ns *corev1.Namespace) bool {
	return ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating
}

func (c *Controller) enqueueRD(obj any) {
	if key, ok := controller.KeyOf(obj); ok {
		c.Queue.Enqueue(key)
	}
}

// enqueueForNamespaces enqueues the distributions that target any of the namespaces (or list them in
// includedNamespaces, for the NamespaceNotExists condition).
func (c *Controller) enqueueForNamespaces(objs ...any) {
	rds, err := c.rds.List(labels.Everything())
	if err != nil {
		klog.Background().Error(err, "List ResourceDistributions for a namespace event")
		return
	}
	var nss []*corev1.Namespace
	for _, obj := range objs {
		if o, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = o.Obj
		}
		if ns, ok := obj.(*corev1.Namespace); ok {
			nss = append(nss, ns)
		}
	}
	for _, rd := range rds {
		sel, err := newTargetSelector(&rd.Spec.Targets)
		if err != nil {
			continue
		}
		for _, ns := range nss {
			if sel.matches(ns) || sel.included.Has(ns.Name) || c.holdsCopy(rd.Name, ns.Name) {
				c.Queue.Enqueue(types.NamespacedName{Name: rd.Name})
				break
			}
		}
	}
}

// holdsCopy reports whether a copy controlled by the distribution is cached in namespace ns (a namespace
// that stopped matching still needs the distribution's attention).
func (c *Controller) holdsCopy(rdName, ns string) bool {
	for _, idx := range c.copies {
		objs, _ := idx.ByIndex(controllerNameIndex, rdName)
		for _, obj := range objs {
			if o, ok := controller.ObjectOf(obj); ok && o.GetNamespace() == ns {
				return true
			}
		}
	}
	return false
}

// forget drops what the controller keeps about a deleted distribution's copies (their write expectations).
func (c *Controller) forget(rdName string) {
	for _, idx := range c.copies {
		objs, _ := idx.ByIndex(controllerNameIndex, rdName)
		for _, obj := range objs {
			if o, ok := controller.ObjectOf(obj); ok {
				c.written.Delete(o.GetUID())
			}
		}
	}
}
