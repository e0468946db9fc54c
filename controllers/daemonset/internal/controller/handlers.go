package controller

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// podUpdateBatch is how long pod update events are gathered before their
// DaemonSet is synced.
const podUpdateBatch = 100 * time.Millisecond

// nodeBatch is how long node events are gathered before every DaemonSet is
// synced: a node joining the cluster changes several times within a second.
const nodeBatch = 500 * time.Millisecond

// Kind is the owner kind of the pods and revisions a DaemonSet controls.
var Kind = controller.OwnerKind{Group: appsv1alpha1.SchemeGroupVersion.Group, Kind: "DaemonSet"}

func (c *Controller) addHandlers(sets, nodes cache.SharedIndexInformer) error {
	return errors.Join(
		c.Watch(sets, c.OwnerHandler(c.forgetSet), "DaemonSets"),
		c.Watch(c.PodInformer, c.podHandler(), "pods"),
		c.Watch(nodes, c.nodeHandler(), "nodes"),
		// A revision deleted by someone else is recreated at the next sync.
		c.Watch(c.RevisionInformer, cache.ResourceEventHandlerFuncs{DeleteFunc: c.revisionDeleted}, "ControllerRevisions"),
	)
}

func (c *Controller) revisionDeleted(obj any) {
	if o, ok := controller.ObjectOf(obj); ok {
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == Kind.Kind {
			c.Queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name})
		}
	}
}

// forgetSet drops a deleted DaemonSet's cached verdicts and rejections,
// and what forget drops (the KeyHandler then enqueues it).
func (c *Controller) forgetSet(obj any, key types.NamespacedName) {
	if o, ok := controller.ObjectOf(obj); ok {
		c.placement.forget(o.GetUID())
		c.rejected.forget(o.GetUID())
	}
	c.forget(key)
}

// forget drops a DaemonSet's expectations, slow-start memory and status
// pacing; its pods go with it through garbage collection.
func (c *Controller) forget(key types.NamespacedName) {
	c.deletes.Delete(key)
	c.creates.Forget(key)
	c.batches.Forget(key)
	c.Pacer.Forget(key)
}

// podHandler maps pod events to the controlling DaemonSet (or, for an
// orphan, the DaemonSets that would adopt it), settles deletion and
// resource-version expectations (kit/controller.DependentHandler) and the
// per-node create expectations.
func (c *Controller) podHandler() cache.ResourceEventHandler {
	dep := controller.DependentHandler{
		Owner: Kind, Queue: c.Queue, Scale: c.deletes, RV: c.RV, FindOwners: c.adopters, UpdateDelay: podUpdateBatch,
	}.Handler()
	observeCreate := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == Kind.Kind {
			c.creates.Observed(types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, nodeplacement.TargetNode(pod), pod.Name)
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			observeCreate(obj)
			dep.OnAdd(obj, isInInitialList)
		},
		UpdateFunc: dep.OnUpdate,
		DeleteFunc: dep.OnDelete,
	}
}

// nodeHandler invalidates the node's cached verdicts and re-syncs every
// DaemonSet when a node appears, goes, or changes in a way eligibility reads
// (labels, taints, unschedulable, deletion). Heartbeats are ignored. Nodes
// replayed from the initial list enqueue nothing: every DaemonSet gets its
// own initial sync.
func (c *Controller) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if n, ok := obj.(*corev1.Node); ok && !isInInitialList {
				c.placement.nodeChanged(n.Name)
				c.enqueueAllSets()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && nodeplacement.EligibilityChanged(o, n, eligibilityOptions) {
				c.placement.nodeChanged(n.Name)
				c.enqueueAllSets()
			}
		},
		DeleteFunc: func(obj any) {
			if o, ok := controller.ObjectOf(obj); ok {
				c.placement.nodeChanged(o.GetName())
			}
			c.enqueueAllSets()
		},
	}
}

func (c *Controller) enqueueAllSets() {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return // a cache lister does not fail
	}
	for _, ds := range sets {
		c.Queue.AddAfter(types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}, nodeBatch)
	}
}

// adopters returns the DaemonSets whose selector matches an orphan pod.
func (c *Controller) adopters(o metav1.Object) []types.NamespacedName {
	return workload.Adopters("DaemonSet", func(ns string) ([]*appsv1alpha1.DaemonSet, error) {
		return c.sets.DaemonSets(ns).List(labels.Everything())
	}, func(ds *appsv1alpha1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }, nil)(o)
}
