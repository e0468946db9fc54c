package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one pod's barrier: gather (caches) → plan (pure) → act.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	pod, found, err := controller.Lookup("pod", key, c.pods.Pods(key.Namespace).Get)
	if err != nil || !found || pod.DeletionTimestamp != nil || !barrier.InScope(pod) {
		return err
	}
	// A barrier we created and the cache does not show yet would be created again. Asked before the cache is
	// read: the informer stores the barrier before its handler settles the expectation, so the other order
	// could find neither.
	if ok, d := c.creates.Satisfied(key); !ok {
		c.Queue.AddAfter(key, c.creates.Timeout()-d)
		return nil
	}
	cm, found, err := controller.Lookup("ConfigMap", types.NamespacedName{Namespace: key.Namespace, Name: barrier.Name(key.Name)},
		c.barriers.ConfigMaps(key.Namespace).Get)
	if err != nil {
		return err
	}
	if !found {
		cm = nil
	}
	// Our last write to the pod or its barrier is not in the cache yet: acting on these copies could repeat
	// it. The write's informer event requeues the pod; the delay is the fallback.
	if ok, wait := c.written.Satisfied(pod); !ok {
		c.Queue.AddAfter(key, wait)
		return nil
	}
	if cm != nil {
		if ok, wait := c.written.Satisfied(cm); !ok {
			c.Queue.AddAfter(key, wait)
			return nil
		}
	}
	return c.act(ctx, pod, cm, planPod(pod, cm))
}
