package controller

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// ObjectOf returns the object carried by an informer event, unwrapping a
// cache.DeletedFinalStateUnknown tombstone. ok is false when obj is neither a
// Kubernetes object nor a tombstone holding one.
func ObjectOf(obj any) (metav1.Object, bool) {
	if t, isTombstone := obj.(cache.DeletedFinalStateUnknown); isTombstone {
		obj = t.Obj
	}
	if t, isTombstone := obj.(*cache.DeletedFinalStateUnknown); isTombstone && t != nil {
		obj = t.Obj
	}
	if obj == nil {
		return nil, false
	}
	o, err := meta.Accessor(obj)
	if err != nil || o == nil || reflect.ValueOf(o).IsNil() {
		return nil, false
	}
	return o, true
}

// PodOf is ObjectOf for pod informers: the pod an event carries (tombstones
// unwrapped); ok is false for anything else.
func PodOf(obj any) (*corev1.Pod, bool) {
	o, ok := ObjectOf(obj)
	if !ok {
		return nil, false
	}
	p, ok := o.(*corev1.Pod)
	return p, ok
}

// KeyOf returns the namespace/name key of an event object (tombstones
// included). For a tombstone whose object is missing it falls back to the
// tombstone's key.
func KeyOf(obj any) (types.NamespacedName, bool) {
	if o, ok := ObjectOf(obj); ok {
		return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, true
	}
	var key string
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		key = t.Key
	case *cache.DeletedFinalStateUnknown:
		if t != nil {
			key = t.Key
		}
	}
	if key == "" {
		return types.NamespacedName{}, false
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// OwnerKind names the kind of owner a controller reconciles. Only the group
// of an ownerReference's apiVersion is compared, so every served version of
// the owner matches.
type OwnerKind struct {
	Group string // e.g. "apps.kruise.io"; "" for the core group
	Kind  string // e.g. "CloneSet"
	// ClusterScoped owners are keyed by name only; namespaced owners live in
	// the namespace of the object they control.
	ClusterScoped bool
}

// Matches reports whether ref points at this kind.
func (k OwnerKind) Matches(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != k.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == k.Group
}

// ControllerKey returns the key of obj's controller if the controllerRef
// points at this kind. Other owners, and non-controller owner references,
// are ignored.
func (k OwnerKind) ControllerKey(obj metav1.Object) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if !k.Matches(ref) {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Name: ref.Name}
	if !k.ClusterScoped {
		key.Namespace = obj.GetNamespace()
	}
	return key, true
}

// OwnerHandler is a cache.ResourceEventHandler for dependent objects (pods,
// PVCs, revisions…): it maps each event to the key of the object's controller
// of kind Owner.
//
//   - Add: the controller's key, delayed if the object is replayed from the
//     informer's initial list (Enqueue gets isInInitialList), immediate for a
//     live create. An object already being deleted counts as a delete.
//   - Update: resyncs (same resourceVersion) are ignored; if the controllerRef
//     changed, the old controller is enqueued too; an object without a
//     matching controller is an orphan and is offered to FindOwners when its
//     labels or controllerRef changed.
//   - Delete: tombstones are unwrapped; the controller's key is enqueued.
type OwnerHandler struct {
	Owner OwnerKind
	// Enqueue receives owner keys; typically Queue.EnqueueEvent.
	Enqueue func(key types.NamespacedName, isInInitialList bool)
	// FindOwners returns the owners that might adopt an orphan, e.g. by
	// label selector. Optional: nil means orphans are ignored.
	FindOwners func(obj metav1.Object) []types.NamespacedName
}

var _ cache.ResourceEventHandler = OwnerHandler{}

// NewOwnerHandler wires an OwnerHandler to q.
func NewOwnerHandler(owner OwnerKind, q *Queue[types.NamespacedName], findOwners func(metav1.Object) []types.NamespacedName) OwnerHandler {
	return OwnerHandler{Owner: owner, Enqueue: q.EnqueueEvent, FindOwners: findOwners}
}

// OnAdd implements cache.ResourceEventHandler.
func (h OwnerHandler) OnAdd(obj any, isInInitialList bool) {
	o, ok := ObjectOf(obj)
	if !ok {
		return
	}
	if o.GetDeletionTimestamp() != nil && !isInInitialList {
		h.OnDelete(obj)
		return
	}
	if key, ok := h.Owner.ControllerKey(o); ok {
		h.Enqueue(key, isInInitialList)
		return
	}
	if metav1.GetControllerOfNoCopy(o) != nil {
		return // controlled by something else
	}
	h.enqueueOrphan(o, isInInitialList)
}

// OnUpdate implements cache.ResourceEventHandler.
func (h OwnerHandler) OnUpdate(oldObj, newObj any) {
	oldO, ok1 := ObjectOf(oldObj)
	newO, ok2 := ObjectOf(newObj)
	if !ok1 || !ok2 {
		return
	}
	if oldO.GetResourceVersion() == newO.GetResourceVersion() {
		return // periodic resync: nothing changed
	}
	oldRef := metav1.GetControllerOfNoCopy(oldO)
	newRef := metav1.GetControllerOfNoCopy(newO)
	refChanged := !reflect.DeepEqual(oldRef, newRef)
	if refChanged {
		if key, ok := h.Owner.ControllerKey(oldO); ok {
			h.Enqueue(key, false)
		}
	}
	if key, ok := h.Owner.ControllerKey(newO); ok {
		h.Enqueue(key, false)
		return
	}
	if newRef != nil {
		return // controlled by something else
	}
	if refChanged || !reflect.DeepEqual(oldO.GetLabels(), newO.GetLabels()) {
		h.enqueueOrphan(newO, false)
	}
}

// OnDelete implements cache.ResourceEventHandler.
func (h OwnerHandler) OnDelete(obj any) {
	o, ok := ObjectOf(obj)
	if !ok {
		return
	}
	if key, ok := h.Owner.ControllerKey(o); ok {
		h.Enqueue(key, false)
	}
}

func (h OwnerHandler) enqueueOrphan(o metav1.Object, isInInitialList bool) {
	if h.FindOwners == nil {
		return
	}
	for _, key := range h.FindOwners(o) {
		h.Enqueue(key, isInInitialList)
	}
}

// KeyHandler is a cache.ResourceEventHandler for the owner objects
// themselves: every add, update (resyncs included) and delete enqueues the
// object's own key immediately. Owners are never delayed: each one is
// reconciled promptly from its own Add event at start-up.
type KeyHandler struct {
	Enqueue func(key types.NamespacedName)
	// Deleted, when set, runs for a deleted object (or its tombstone)
	// before its key is enqueued: the place to drop what a reconciler keeps
	// about the object (expectations, caches).
	Deleted func(obj any, key types.NamespacedName)
}

var _ cache.ResourceEventHandler = KeyHandler{}

// NewKeyHandler wires a KeyHandler to q.
func NewKeyHandler(q *Queue[types.NamespacedName]) KeyHandler {
	return KeyHandler{Enqueue: q.Enqueue}
}

// OnAdd implements cache.ResourceEventHandler.
func (h KeyHandler) OnAdd(obj any, _ bool) { h.enqueue(obj) }

// OnUpdate implements cache.ResourceEventHandler.
func (h KeyHandler) OnUpdate(_, newObj any) { h.enqueue(newObj) }

// OnDelete implements cache.ResourceEventHandler.
func (h KeyHandler) OnDelete(obj any) {
	if key, ok := KeyOf(obj); ok && h.Deleted != nil {
		h.Deleted(obj, key)
	}
	h.enqueue(obj)
}

func (h KeyHandler) enqueue(obj any) {
	if key, ok := KeyOf(obj); ok {
		h.Enqueue(key)
	}
}

// OnEvery is an event handler calling f with the object of every add,
// update (the new object; resyncs included) and delete (possibly a
// tombstone): for handlers that map any change of an object to the keys it
// concerns the same way.
func OnEvery(f func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }, DeleteFunc: f}
}

// OnChange is OnEvery without the resyncs: an update whose object kept its resourceVersion (the informer's
// periodic resync) is not passed on; an update of objects it cannot read is.
func OnChange(f func(obj any)) cache.ResourceEventHandlerFuncs {
	h := OnEvery(f)
	h.UpdateFunc = func(old, obj any) {
		o, ok1 := ObjectOf(old)
		n, ok2 := ObjectOf(obj)
		if !ok1 || !ok2 || o.GetResourceVersion() != n.GetResourceVersion() {
			f(obj)
		}
	}
	return h
}

// SelectorMatches reports whether a workload's selector selects an object
// with these labels, as adoption reads it: an empty or unparsable selector
// selects nothing (validation rejects both; a cached object may predate it).
func SelectorMatches(selector *metav1.LabelSelector, objLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(objLabels))
}
