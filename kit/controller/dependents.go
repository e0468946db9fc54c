package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// DependentHandler handles the events of a workload's dependents (pods,
// PVCs): it settles the owner's scale and resource-version expectations and
// enqueues the owner.
//
// Objects replayed from an informer's initial list enqueue nothing unless
// ReplayInitialList is set: workers start only once every cache has synced
// and each owner is enqueued by its own initial-list event, so its first sync
// already sees all of its dependents (OpenKruise instead requeues the owner
// per replayed pod with a growing delay, behaviour §2.6 in docs/openkruise-behaviour.md). Updates of existing
// dependents (scheduling, kubelet status, the controller's own writes) arrive
// by the thousand during a large rollout and every sync looks at all of them,
// so they are gathered over UpdateDelay; creations and deletions, which
// expectations wait for, enqueue at once.
type DependentHandler struct {
	Owner      OwnerKind
	Queue      *Queue[types.NamespacedName]
	Scale      *expectations.Scale[types.NamespacedName]
	RV         *expectations.ResourceVersion
	FindOwners func(obj metav1.Object) []types.NamespacedName
	// ReplayInitialList: initial-list objects enqueue their owner at once,
	// one event per object (--disable-initial-list-delay).
	ReplayInitialList bool
	UpdateDelay       time.Duration
}

// Handler returns the cache.ResourceEventHandler.
func (h DependentHandler) Handler() cache.ResourceEventHandler {
	owner := NewOwnerHandler(h.Owner, h.Queue, h.FindOwners)
	batched := OwnerHandler{Owner: h.Owner, FindOwners: h.FindOwners, Enqueue: func(key types.NamespacedName, _ bool) {
		h.Queue.AddAfter(key, h.UpdateDelay)
	}}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if o, ok := ObjectOf(obj); ok {
				if key, ok := h.Owner.ControllerKey(o); ok {
					h.Scale.Observe(key, expectations.Create, o.GetName())
				}
				h.RV.Observe(o)
			}
			if isInInitialList && !h.ReplayInitialList {
				return
			}
			owner.OnAdd(obj, false)
		},
		UpdateFunc: func(oldObj, newObj any) {
			if o, ok := ObjectOf(newObj); ok {
				h.RV.Observe(o)
				if o.GetDeletionTimestamp() != nil {
					// A dependent being deleted that waits for its
					// finalizers is as good as gone for the expectation.
					if key, ok := h.Owner.ControllerKey(o); ok {
						h.Scale.Observe(key, expectations.Delete, o.GetName())
					}
				}
			}
			batched.OnUpdate(oldObj, newObj)
		},
		DeleteFunc: func(obj any) {
			if o, ok := ObjectOf(obj); ok {
				if key, ok := h.Owner.ControllerKey(o); ok {
					h.Scale.Observe(key, expectations.Delete, o.GetName())
				}
				h.RV.Delete(o.GetUID())
			}
			owner.OnDelete(obj)
		},
	}
}
