package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// addHandlers maps informer events to UnitedDeployment keys:
//   - a UnitedDeployment's own events enqueue it;
//   - a subset workload it controls enqueues it on every change (its status feeds the UnitedDeployment's) and
//     on deletion (the subset must be re-created);
//   - a pod of a subset enqueues the UnitedDeployments of its namespace whose selector matches it: the updated
//     and ready counts are read from pods, and the pod cache may catch up after the workload's status did.
func (c *Controller) addHandlers(uds, pods cache.SharedIndexInformer) error {
	if _, err := uds.AddEventHandler(kitcontroller.NewKeyHandler(c.Queue)); err != nil {
		return fmt.Errorf("watch UnitedDeployments: %w", err)
	}
	// A deleted UnitedDeployment's write expectation would otherwise stay in memory.
	if _, err := uds.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if o, ok := kitcontroller.ObjectOf(obj); ok {
			c.written.Delete(o.GetUID())
		}
	}}); err != nil {
		return fmt.Errorf("watch UnitedDeployments: %w", err)
	}
	owner := kitcontroller.OwnerKind{Group: appsv1alpha1.GroupName, Kind: "UnitedDeployment"}
	for k, w := range c.kinds {
		if _, err := w.informer().AddEventHandler(kitcontroller.NewOwnerHandler(owner, c.Queue, nil)); err != nil {
			return fmt.Errorf("watch %ss: %w", k, err)
		}
	}
	if _, err := pods.AddEventHandler(kitcontroller.OnEvery(c.enqueuePodOwners)); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	return nil
}

func (c *Controller) enqueuePodOwners(obj any) {
	p, ok := kitcontroller.PodOf(obj)
	if !ok {
		return
	}
	for _, key := range c.podOwners(p) {
		c.Queue.Enqueue(key)
	}
}

// podOwners returns the UnitedDeployments of p's namespace whose selector matches p: the rule by which a
// workload finds the pods it may adopt (kit/workload.Adopters), though a UnitedDeployment only counts them.
func (c *Controller) podOwners(p *corev1.Pod) []types.NamespacedName {
	return workload.Adopters("UnitedDeployment", func(ns string) ([]*appsv1alpha1.UnitedDeployment, error) {
		return c.uds.UnitedDeployments(ns).List(labels.Everything())
	}, func(ud *appsv1alpha1.UnitedDeployment) *metav1.LabelSelector { return ud.Spec.Selector }, nil)(p)
}
