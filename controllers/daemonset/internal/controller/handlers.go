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
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

// podUpdateBatch is how long pod update events are gathered before their
// DaemonSet is synced.
const podUpdateBatch = 100 * time.Millisecond

// nodeBatch is how long node events are gathered before every DaemonSet is
// synced: a node joining the cluster changes several times within a second.
const nodeBatch = 500 * time.Millisecond

// Kind is the owner kind of the pods and revisions a DaemonSet controls.
var Kind = controller.OwnerKind{Group: appsv1alpha1.SchemeGroupVersion.Group, Kind: "DaemonSet"}

func (c *Controller) addHandlers(sets, pods, nodes, revisions cache.SharedIndexInformer) error {
	if _, err := sets.AddEventHandler(controller.KeyHandler{Enqueue: c.queue.Enqueue, Deleted: c.forgetSet}); err != nil {
		return fmt.Errorf("watch DaemonSets: %w", err)
	}
	if _, err := pods.AddEventHandler(c.podHandler()); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	if _, err := nodes.AddEventHandler(c.nodeHandler()); err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	// A revision deleted by someone else is recreated at the next sync.
	if _, err := revisions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if o, ok := controller.ObjectOf(obj); ok {
				if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == Kind.Kind {
					c.queue.Enqueue(types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name})
				}
			}
		},
	}); err != nil {
		return fmt.Errorf("watch ControllerRevisions: %w", err)
	}
	return nil
}

// forgetSet drops a deleted DaemonSet's expectations and cached verdicts
// (the KeyHandler then enqueues it); its pods go with it through garbage
// collection.
func (c *Controller) forgetSet(obj any, key types.NamespacedName) {
	if o, ok := controller.ObjectOf(obj); ok {
		c.placement.forget(o.GetUID())
		c.rejected.forget(o.GetUID())
	}
	c.deletes.Delete(key)
	c.creates.Forget(key)
	c.batches.Forget(key)
	c.pacer.Forget(key)
}

// podHandler maps pod events to the controlling DaemonSet (or, for an
// orphan, the DaemonSets that would adopt it), settles deletion and
// resource-version expectations (kit/controller.DependentHandler) and the
// per-node create expectations.
func (c *Controller) podHandler() cache.ResourceEventHandler {
	dep := controller.DependentHandler{
		Owner: Kind, Queue: c.queue, Scale: c.deletes, RV: c.rvExp, FindOwners: c.adopters, UpdateDelay: podUpdateBatch,
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
		c.queue.AddAfter(types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}, nodeBatch)
	}
}

// adopters returns the DaemonSets whose selector matches an orphan pod.
func (c *Controller) adopters(o metav1.Object) []types.NamespacedName {
	if _, isPod := o.(*corev1.Pod); !isPod {
		return nil
	}
	sets, err := c.sets.DaemonSets(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("find the DaemonSets that may adopt pod %s/%s: %w", o.GetNamespace(), o.GetName(), err))
		return nil
	}
	var out []types.NamespacedName
	for _, ds := range sets {
		if controller.SelectorMatches(ds.Spec.Selector, o.GetLabels()) {
			out = append(out, types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name})
		}
	}
	return out
}
