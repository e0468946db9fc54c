package imagepulljob

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func (c *Controller) addHandlers(jobInf, niInf, podInf cache.SharedIndexInformer) error {
	if _, err := jobInf.AddEventHandler(controller.ResourceVersionHandler(c.written, controller.NewKeyHandler(c.Queue))); err != nil {
		return fmt.Errorf("add ImagePullJob handler: %w", err)
	}
	if _, err := niInf.AddEventHandler(c.nodeImageHandler()); err != nil {
		return fmt.Errorf("add NodeImage handler: %w", err)
	}
	_, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueForPod(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			// What a podSelector job reads from a pod: its node, labels and whether it is active.
			if o.Spec.NodeName != n.Spec.NodeName || activeScheduled(o) != activeScheduled(n) || !maps.Equal(o.Labels, n.Labels) {
				c.enqueueForPod(o)
				c.enqueueForPod(n)
			}
		},
		DeleteFunc: c.enqueueForPod,
	})
	if err != nil {
		return fmt.Errorf("add pod handler: %w", err)
	}
	return nil
}

// nodeImageHandler maps NodeImage events to jobs: the owners of its tags (their pull status changed), and the
// unfinished jobs selecting it when it is new, relabelled, removed or its spec changed. A spec change is a tag
// written by one job (or pruned by the NodeImage reconciler), and another job's sync may be waiting for the cache
// to show exactly that write (niWritten) before it writes its own tag there: that job owns nothing on this
// NodeImage yet, so without this it would wait for the expectation to time out (CI saw a job wait so).
func (c *Controller) nodeImageHandler() cache.ResourceEventHandler {
	return controller.ResourceVersionHandler(c.niWritten, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueSelecting(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*appsv1beta1.NodeImage), newObj.(*appsv1beta1.NodeImage)
			c.enqueueOwners(o)
			c.enqueueOwners(n)
			// generation moves with the spec only (status subresource); the agent's status reports do not.
			if o.Generation != n.Generation || !maps.Equal(o.Labels, n.Labels) {
				c.enqueueSelecting(n)
			}
		},
		DeleteFunc: c.enqueueSelecting,
	})
}

// enqueueOwners enqueues the jobs a NodeImage's tags name (their pull status changed).
func (c *Controller) enqueueOwners(ni *appsv1beta1.NodeImage) {
	for _, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			for _, r := range t.OwnerReferences {
				if r.Kind == "ImagePullJob" {
					c.Queue.Enqueue(types.NamespacedName{Namespace: r.Namespace, Name: r.Name})
				}
			}
		}
	}
}

// enqueueSelecting enqueues the unfinished jobs a new, relabelled or removed NodeImage may concern: those whose
// node selector selects it and those choosing nodes by pods.
func (c *Controller) enqueueSelecting(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	ni, ok := o.(*appsv1beta1.NodeImage)
	if !ok {
		return
	}
	jobs, err := c.jobs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, j := range jobs {
		if j.Status.CompletionTime == nil && (j.Spec.PodSelector != nil || selectsNodeImage(&j.Spec, ni)) {
			c.Queue.Enqueue(types.NamespacedName{Namespace: j.Namespace, Name: j.Name})
		}
	}
}

// enqueueForPod enqueues the unfinished jobs of the pod's namespace whose podSelector matches it.
func (c *Controller) enqueueForPod(obj any) {
	pod, ok := controller.PodOf(obj)
	if !ok {
		return
	}
	jobs, err := c.jobs.ImagePullJobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, j := range jobs {
		if j.Status.CompletionTime != nil || j.Spec.PodSelector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(&j.Spec.PodSelector.LabelSelector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			c.Queue.Enqueue(types.NamespacedName{Namespace: j.Namespace, Name: j.Name})
		}
	}
}
