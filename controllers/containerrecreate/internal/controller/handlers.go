package controller

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func (c *Controller) addHandlers(crrInf, podInf cache.SharedIndexInformer) error {
	if _, err := crrInf.AddEventHandler(controller.NewKeyHandler(c.Queue)); err != nil {
		return fmt.Errorf("add ContainerRecreateRequest handler: %w", err)
	}
	_, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueForPod(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			// What a request reads from its pod: whether it goes, and its containers' statuses.
			if o.DeletionTimestamp == nil && n.DeletionTimestamp != nil ||
				!reflect.DeepEqual(o.Status.ContainerStatuses, n.Status.ContainerStatuses) {
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

// enqueueForPod enqueues the unfinished requests naming the pod.
func (c *Controller) enqueueForPod(obj any) {
	pod, ok := controller.PodOf(obj)
	if !ok {
		return
	}
	objs, err := c.crrIndex.ByIndex(podNameIndex, pod.Namespace+"/"+pod.Name)
	if err != nil {
		return
	}
	for _, o := range objs {
		if crr, ok := o.(*appsv1alpha1.ContainerRecreateRequest); ok && !finished(crr) {
			c.Queue.Enqueue(types.NamespacedName{Namespace: crr.Namespace, Name: crr.Name})
		}
	}
}
