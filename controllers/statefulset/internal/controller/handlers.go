package controller

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// podUpdateBatch is how long pod update events are gathered before their
// set is synced.
const podUpdateBatch = 100 * time.Millisecond

// Kind is the owner kind of the pods and revisions a set controls.
var Kind = controller.OwnerKind{Group: appsv1beta1.SchemeGroupVersion.Group, Kind: "StatefulSet"}

func (c *Controller) addHandlers(sets, claims cache.SharedIndexInformer) error {
	return errors.Join(
		c.Watch(sets, c.OwnerHandler(func(_ any, key types.NamespacedName) { c.forget(key) }), "StatefulSets"),
		c.Watch(c.PodInformer, c.podHandler(), "pods"),
		c.Watch(claims, c.claimHandler(), "PVCs"),
	)
}

// forget drops a deleted set's expectations (the KeyHandler then enqueues
// it); its pods go with it through garbage collection.
func (c *Controller) forget(key types.NamespacedName) {
	c.scaleExp.Delete(key)
}

// podHandler maps pod events to the controlling set (or, for an orphan, the
// sets that would adopt it) and settles expectations
// (kit/controller.DependentHandler).
func (c *Controller) podHandler() cache.ResourceEventHandler {
	return controller.DependentHandler{
		Owner: Kind, Queue: c.Queue, Scale: c.scaleExp, RV: c.RV, FindOwners: c.adopters, UpdateDelay: podUpdateBatch,
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
			c.Queue.AddAfter(key, podUpdateBatch)
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

// adopters returns the sets that would adopt an orphan pod: their selector
// matches it and it carries their name pattern <set>-<ordinal>.
func (c *Controller) adopters(o metav1.Object) []types.NamespacedName {
	return workload.Adopters("StatefulSet", func(ns string) ([]*appsv1beta1.StatefulSet, error) {
		return c.sets.StatefulSets(ns).List(labels.Everything())
	}, func(set *appsv1beta1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }, isOrdinalOf)(o)
}

// isOrdinalOf reports whether pod is named like one of set's ordinals.
func isOrdinalOf(set *appsv1beta1.StatefulSet, pod metav1.Object) bool {
	_, ok := ordinalOf(set.Name, pod.GetName())
	return ok
}
