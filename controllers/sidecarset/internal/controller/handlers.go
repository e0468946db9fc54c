package controller

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func (c *Controller) addHandlers(sets, pods, namespaces, revisions cache.SharedIndexInformer) error {
	if _, err := sets.AddEventHandler(controller.ResourceVersionHandler(c.rvExp, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.enqueueObject(o) },
		UpdateFunc: func(_, o any) { c.enqueueObject(o) },
		DeleteFunc: func(o any) { c.enqueueObject(o) },
	})); err != nil {
		return fmt.Errorf("sidecarset handler: %w", err)
	}
	if _, err := pods.AddEventHandler(controller.ResourceVersionHandler(c.rvExp, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) { c.podEvent(o, initial) },
		UpdateFunc: func(old, cur any) {
			if o, n := old.(*corev1.Pod), cur.(*corev1.Pod); podChanged(o, n) {
				c.podEvent(n, false)
			}
		},
		DeleteFunc: func(o any) { c.podEvent(o, false) },
	})); err != nil {
		return fmt.Errorf("pod handler: %w", err)
	}
	// A namespace's labels decide namespaceSelector matches: re-sync the
	// SidecarSets that have one.
	if _, err := namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if !reflect.DeepEqual(old.(*corev1.Namespace).Labels, cur.(*corev1.Namespace).Labels) {
				c.enqueueNamespaceSelecting()
			}
		},
	}); err != nil {
		return fmt.Errorf("namespace handler: %w", err)
	}
	// Someone deleting a revision (or our own creation showing up).
	if _, err := revisions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.enqueueRevisionOwner(o) },
		DeleteFunc: func(o any) { c.enqueueRevisionOwner(o) },
	}); err != nil {
		return fmt.Errorf("revision handler: %w", err)
	}
	return nil
}

func (c *Controller) enqueueObject(o any) {
	if m, ok := controller.ObjectOf(o); ok {
		c.queue.Enqueue(m.GetName())
	}
}

func (c *Controller) podEvent(o any, initial bool) {
	p, ok := controller.ObjectOf(o)
	if !ok {
		return
	}
	for name := range sidecarcontrol.InjectedSets(p) {
		c.queue.EnqueueEvent(name, initial)
	}
}

func (c *Controller) enqueueRevisionOwner(o any) {
	if m, ok := controller.ObjectOf(o); ok {
		if r, ok := m.(*appsv1.ControllerRevision); ok && r.Labels[sidecarcontrol.RevisionNameLabel] != "" {
			c.queue.Enqueue(r.Labels[sidecarcontrol.RevisionNameLabel])
		}
	}
}

func (c *Controller) enqueueNamespaceSelecting() {
	sets, err := c.sets.List(everything)
	if err != nil {
		return
	}
	for _, s := range sets {
		if s.Spec.NamespaceSelector != nil {
			c.queue.Enqueue(s.Name)
		}
	}
}

// podChanged: what a SidecarSet's status or upgrade depends on — labels
// (selectors), annotations (hashes, state), containers, readiness and
// container statuses, deletion.
func podChanged(o, n *corev1.Pod) bool {
	if o.ResourceVersion == n.ResourceVersion {
		return false
	}
	return !reflect.DeepEqual(o.Labels, n.Labels) ||
		!reflect.DeepEqual(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.Spec.Containers, n.Spec.Containers) ||
		!reflect.DeepEqual(o.Status.ContainerStatuses, n.Status.ContainerStatuses) ||
		!reflect.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
		o.Status.Phase != n.Status.Phase ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}
