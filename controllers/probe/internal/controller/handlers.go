package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func (c *Controller) addHandlers(markers, probes, nodes, pods cache.SharedIndexInformer) error {
	if _, err := markers.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onMarker,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*appsv1alpha1.PodProbeMarker)
			n, ok2 := obj.(*appsv1alpha1.PodProbeMarker)
			if ok1 && ok2 && o.Generation != n.Generation {
				c.retire(types.NamespacedName{Namespace: n.Namespace, Name: n.Name}, retiredProbes(o, n))
			}
			c.onMarker(obj)
		},
		DeleteFunc: c.onMarker,
	}); err != nil {
		return fmt.Errorf("watch PodProbeMarkers: %w", err)
	}
	if _, err := probes.AddEventHandler(controller.OnEvery(c.onNamed)); err != nil {
		return fmt.Errorf("watch NodePodProbes: %w", err)
	}
	// Only a node's disappearance matters: its NodePodProbe goes.
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNamed,
		DeleteFunc: c.onNamed,
	}); err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	if _, err := pods.AddEventHandler(controller.ResourceVersionHandler(c.podRV, cache.ResourceEventHandlerFuncs{
		AddFunc: c.onPod,
		UpdateFunc: func(old, obj any) {
			c.onPod(old)
			c.onPod(obj)
		},
		DeleteFunc: c.onPod,
	})); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	return nil
}

// onMarker syncs the marker and every node running a pod of its namespace
// (a selector change may add or drop any of them).
func (c *Controller) onMarker(obj any) {
	key, ok := controller.KeyOf(obj)
	if !ok {
		return
	}
	c.ppmQueue.Enqueue(key)
	pods, err := c.pods.Pods(key.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" && !nodes[p.Spec.NodeName] {
			nodes[p.Spec.NodeName] = true
			c.nodeQueue.Enqueue(p.Spec.NodeName)
		}
	}
}

// onNamed enqueues the node a node or NodePodProbe is named after.
func (c *Controller) onNamed(obj any) {
	if o, ok := controller.ObjectOf(obj); ok {
		c.nodeQueue.Enqueue(o.GetName())
	}
}

// onPod syncs the pod's node and the markers selecting it (matchedPods).
func (c *Controller) onPod(obj any) {
	p, ok := controller.PodOf(obj)
	if !ok {
		return
	}
	if p.Spec.NodeName != "" {
		c.nodeQueue.Enqueue(p.Spec.NodeName)
	}
	ms, err := c.markers.PodProbeMarkers(p.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, m := range ms {
		// Only a marker selecting the pod counts it (a label change calls
		// this with the old and the new pod).
		if selects(m, p) {
			c.ppmQueue.Enqueue(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		}
	}
}
