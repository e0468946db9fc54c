package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// OwnerUIDIndex is the name of the index built by IndexByOwnerUID.
const OwnerUIDIndex = "ownerUID"

// IndexByOwnerUID is a cache.IndexFunc that indexes an object under the UID
// of every owner reference it carries (OpenKruise's "ownerRefUID" index), so
// a controller finds its pods with one map lookup instead of listing and
// filtering a namespace.
func IndexByOwnerUID(obj any) ([]string, error) {
	o, ok := ObjectOf(obj)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out, nil
}

// AddOwnerUIDIndex adds IndexByOwnerUID to inf unless it has it already
// (informers are shared: another reconciler of the binary, or the informer's
// constructor, may have added it). Call it before the informer starts.
func AddOwnerUIDIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[OwnerUIDIndex]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{OwnerUIDIndex: IndexByOwnerUID}); err != nil {
		return fmt.Errorf("add owner-UID index: %w", err)
	}
	return nil
}

// ByOwnerUID returns the objects in indexer owned by uid. The objects are
// shared with the cache: do not mutate them.
func ByOwnerUID(indexer cache.Indexer, uid types.UID) ([]any, error) {
	return indexer.ByIndex(OwnerUIDIndex, string(uid))
}

// Controlled returns the objects of type T in indexer (owner-UID index)
// whose controller is owner: merely owned ones and other types are left
// out. The objects are shared with the cache: do not mutate them.
func Controlled[T metav1.Object](indexer cache.Indexer, owner metav1.Object) ([]T, error) {
	objs, err := ByOwnerUID(indexer, owner.GetUID())
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok && metav1.IsControlledBy(t, owner) {
			out = append(out, t)
		}
	}
	return out, nil
}

// StripManagedFields is a cache.TransformFunc that drops metadata.managedFields,
// which controllers never read and which is a large share of a cached pod's
// memory. Use it with informer factories (informers.WithTransform) or
// SharedIndexInformer.SetTransform. Tombstones and non-objects pass through.
func StripManagedFields(obj any) (any, error) {
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		return obj, nil
	}
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = StripManagedFields

// OrphanIndex is the name of the index built by IndexOrphanByNamespace.
const OrphanIndex = "orphanNamespace"

// IndexOrphanByNamespace is a cache.IndexFunc that indexes an object without
// a controller under its namespace, so adoption looks at the few orphans of
// a namespace instead of every object in it on each sync.
func IndexOrphanByNamespace(obj any) ([]string, error) {
	o, ok := ObjectOf(obj)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	if metav1.GetControllerOfNoCopy(o) != nil {
		return nil, nil
	}
	return []string{o.GetNamespace()}, nil
}
