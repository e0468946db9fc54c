package controller

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// podUpdateBatch is how long pod and PVC update events are gathered before
// their CloneSet is synced.
const podUpdateBatch = 100 * time.Millisecond

// Kind is the owner kind of the pods, PVCs and revisions a CloneSet controls.
var Kind = controller.OwnerKind{Group: appsv1alpha1.SchemeGroupVersion.Group, Kind: "CloneSet"}

func (c *Controller) addHandlers(sets, pvcs, nodes cache.SharedIndexInformer) error {
	return errors.Join(
		c.Watch(sets, c.OwnerHandler(func(_ any, key types.NamespacedName) { c.forget(key) }), "CloneSets"),
		c.Watch(c.PodInformer, c.dependentHandler(), "pods"),
		c.Watch(c.PodInformer, c.newPodHandler(), "new pods"),
		c.Watch(pvcs, c.dependentHandler(), "PVCs"),
		c.Watch(nodes, nil, "nodes"),
	)
}

// forget drops what the controller keeps for a deleted CloneSet (the
// KeyHandler then enqueues it); its pods and PVCs go with it through garbage
// collection.
func (c *Controller) forget(key types.NamespacedName) {
	c.scaleExp.Delete(key)
	c.Pacer.Forget(key)
	c.deletedNames.drop(key)
}

// dependentHandler maps pod and PVC events to the controlling CloneSet and
// settles expectations (kit/controller.DependentHandler): pods replayed from
// the initial list enqueue nothing, so each CloneSet is reconciled once at
// start-up; with --disable-initial-list-delay they enqueue at once, one event
// per object, as before OpenKruise v1.3.
func (c *Controller) dependentHandler() cache.ResourceEventHandler {
	return controller.DependentHandler{
		Owner: Kind, Queue: c.Queue, Scale: c.scaleExp, RV: c.RV, FindOwners: c.findSets,
		ReplayInitialList: c.replayInitialList, UpdateDelay: podUpdateBatch,
	}.Handler()
}

// findSets returns the CloneSets whose selector matches an orphan's labels:
// the ones that may adopt it.
func (c *Controller) findSets(o metav1.Object) []types.NamespacedName {
	return workload.Adopters("CloneSet", func(ns string) ([]*appsv1alpha1.CloneSet, error) {
		return c.sets.CloneSets(ns).List(labels.Everything())
	}, func(cs *appsv1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }, nil)(o)
}
