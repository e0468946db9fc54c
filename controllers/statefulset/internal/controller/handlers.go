package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// podUpdateBatch is how long pod update events are gathered before their
// set is synced.
const podUpdateBatch = 100 * time.Millisecond

// Kind is the owner kind of the pods and revisions a set controls.
var Kind = controller.OwnerKind{Group: appsv1beta1.SchemeGroupVersion.Group, Kind: "StatefulSet"}

func (c *Controller) addHandlers(sets, pods, claims cache.SharedIndexInformer) error {
	if _, err := sets.AddEventHandler(controller.KeyHandler{Enqueue: c.queue.Enqueue, Deleted: c.forgetSet}); err != nil {
		return fmt.Errorf("watch StatefulSets: %w", err)
	}
	if _, err := pods.AddEventHandler(c.podHandler()); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	if _, err := claims.AddEventHandler(c.claimHandler()); err != nil {
		return fmt.Errorf("watch PVCs: %w", err)
	}
	return nil
}

// forgetSet drops a deleted set's expectations (the KeyHandler then
// enqueues it); its pods go with it through garbage collection.
func (c *Controller) forgetSet(_ any, key types.NamespacedName) {
	c.scaleExp.Delete(key)
}

// podHandler maps pod events to the controlling set (or, for an orphan, the
// sets that would adopt it) and settles expectations
// (kit/controller.DependentHandler).
func (c *Controller) podHandler() cache.ResourceEventHandler {
	return controller.DependentHandler{
		Owner: Kind, Queue: c.queue, Scale: c.scaleExp, RV: c.rvExp, FindOwners: c.adopters, UpdateDelay: podUpdateBatch,
	}.Handler()
}

// claimHandler settles claim expectations and wakes the set whose pod
// waits for a claim: the set named by the claim's owner reference, or, for
// a retained claim, the sets in its namespace whose claim name pattern it
// fits.
func (c *Controller) claimHandler() cache.ResourceEventHandler {
	wake := func(obj any, created bool) {
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
			if !isTomb {
				return
			}
			if pvc, ok = tomb.Obj.(*corev1.PersistentVolumeClaim); !ok {
				return
			}
		}
		for _, key := range c.setsOfClaim(pvc) {
			if created {
				c.scaleExp.Observe(key, expectations.Create, pvc.Name)
			}
			c.queue.AddAfter(key, podUpdateBatch)
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				wake(obj, true)
			}
		},
		UpdateFunc: func(_, obj any) { wake(obj, false) },
		DeleteFunc: func(obj any) { wake(obj, false) },
	}
}

// setsOfClaim returns the sets a claim may belong to: those whose
// volumeClaimTemplates and name produce the claim's name prefix.
func (c *Controller) setsOfClaim(pvc *corev1.PersistentVolumeClaim) []types.NamespacedName {
	sets, err := c.sets.StatefulSets(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []types.NamespacedName
	for _, set := range sets {
		for _, vct := range set.Spec.VolumeClaimTemplates {
			if _, ok := ordinalOf(vct.Name+"-"+set.Name, pvc.Name); ok {
				out = append(out, types.NamespacedName{Namespace: set.Namespace, Name: set.Name})
				break
			}
		}
	}
	return out
}

// adopters returns the sets that would adopt an orphan pod (adopt.go).
func (c *Controller) adopters(o metav1.Object) []types.NamespacedName {
	if _, isPod := o.(*corev1.Pod); !isPod {
		return nil
	}
	sets, err := c.sets.StatefulSets(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		// An event handler has no caller to return to; the orphan waits for
		// its next event or the StatefulSets' next sync.
		utilruntime.HandleError(fmt.Errorf("find the StatefulSets that may adopt pod %s/%s: %w", o.GetNamespace(), o.GetName(), err))
		return nil
	}
	var out []types.NamespacedName
	for _, set := range sets {
		if !controller.SelectorMatches(set.Spec.Selector, o.GetLabels()) {
			continue
		}
		if _, ok := ordinalOf(set.Name, o.GetName()); ok {
			out = append(out, types.NamespacedName{Namespace: set.Namespace, Name: set.Name})
		}
	}
	return out
}
