package nodeimage

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func (c *Controller) addHandlers(nodeInf, niInf, jobInf cache.SharedIndexInformer) error {
	byName := func(obj any) {
		if o, ok := controller.ObjectOf(obj); ok {
			c.Queue.Enqueue(types.NamespacedName{Name: o.GetName()})
		}
	}
	_, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: byName,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			// What a NodeImage follows of its node: labels, readiness (creation), deletion.
			_, or := readySince(o)
			_, nr := readySince(n)
			if !maps.Equal(o.Labels, n.Labels) || or != nr || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				byName(n)
			}
		},
		DeleteFunc: byName,
	})
	if err != nil {
		return fmt.Errorf("add Node handler: %w", err)
	}
	if _, err := niInf.AddEventHandler(controller.ResourceVersionHandler(c.written, controller.OnEvery(byName))); err != nil {
		return fmt.Errorf("add NodeImage handler: %w", err)
	}
	// A job that goes takes its tags off the NodeImages that carry them.
	_, err = jobInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		o, ok := controller.ObjectOf(obj)
		if !ok {
			return
		}
		nis, err := c.niIndex.ByIndex(jobUIDIndex, string(o.GetUID()))
		if err != nil {
			return
		}
		for _, ni := range nis {
			byName(ni.(*appsv1beta1.NodeImage))
		}
	}})
	if err != nil {
		return fmt.Errorf("add ImagePullJob handler: %w", err)
	}
	return nil
}
