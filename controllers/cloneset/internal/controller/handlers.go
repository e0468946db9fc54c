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

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// podUpdateBatch is how long pod and PVC update events are gathered before
// their CloneSet is synced.
const podUpdateBatch = 100 * time.Millisecond

// Kind is the owner kind of the pods, PVCs and revisions a CloneSet controls.
var Kind = controller.OwnerKind{Group: appsv1alpha1.SchemeGroupVersion.Group, Kind: "CloneSet"}

func (c *Controller) addHandlers(sets, pods, pvcs cache.SharedIndexInformer) error {
	if _, err := sets.AddEventHandler(controller.KeyHandler{Enqueue: c.queue.Enqueue, Deleted: c.forgetSet}); err != nil {
		return fmt.Errorf("watch CloneSets: %w", err)
	}
	if _, err := pods.AddEventHandler(c.dependentHandler()); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	if _, err := pvcs.AddEventHandler(c.dependentHandler()); err != nil {
		return fmt.Errorf("watch PVCs: %w", err)
	}
	return nil
}

// forgetSet drops the expectations of a deleted CloneSet (the KeyHandler
// then enqueues it); its pods and PVCs go with it through garbage collection.
func (c *Controller) forgetSet(_ any, key types.NamespacedName) {
	c.scaleExp.Delete(key)
	c.pacer.Forget(key)
}

// dependentHandler maps pod and PVC events to the controlling CloneSet and
// settles expectations (kit/controller.DependentHandler): pods replayed from
// the initial list enqueue nothing, so each CloneSet is reconciled once at
// start-up; with --disable-initial-list-delay they enqueue at once, one event
// per object, as before OpenKruise v1.3.
func (c *Controller) dependentHandler() cache.ResourceEventHandler {
	return controller.DependentHandler{
		Owner: Kind, Queue: c.queue, Scale: c.scaleExp, RV: c.rvExp, FindOwners: c.findSets,
		ReplayInitialList: c.replayInitialList, UpdateDelay: podUpdateBatch,
	}.Handler()
}

// findSets returns the CloneSets whose selector matches an orphan's labels:
// the ones that may adopt it.
func (c *Controller) findSets(o metav1.Object) []types.NamespacedName {
	if _, isPod := o.(*corev1.Pod); !isPod {
		return nil
	}
	sets, err := c.sets.CloneSets(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		// An event handler has no caller to return to; the orphan waits for
		// its next event or the CloneSets' next sync.
		utilruntime.HandleError(fmt.Errorf("find the CloneSets that may adopt pod %s/%s: %w", o.GetNamespace(), o.GetName(), err))
		return nil
	}
	var out []types.NamespacedName
	for _, cs := range sets {
		if controller.SelectorMatches(cs.Spec.Selector, o.GetLabels()) {
			out = append(out, types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name})
		}
	}
	return out
}
