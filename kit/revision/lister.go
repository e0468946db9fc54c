package revision

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Lister reads a workload's ControllerRevisions from an informer cache.
type Lister struct {
	indexer cache.Indexer
}

// NewLister returns a Lister over the indexer of a ControllerRevision
// informer. The informer must carry controller.OwnerUIDIndex (call
// controller.AddOwnerUIDIndex before it starts).
func NewLister(indexer cache.Indexer) *Lister {
	return &Lister{indexer: indexer}
}

// List returns the ControllerRevisions whose controllerRef is parent (same
// UID), sorted oldest first (Sort). Revisions merely owned by parent, or
// orphans matching its selector, are not returned: Flotilla does not adopt
// revisions. The objects are shared with the cache: never mutate them —
// Control deep-copies before it writes.
func (l *Lister) List(parent metav1.Object) ([]*appsv1.ControllerRevision, error) {
	revs, err := controller.Controlled[*appsv1.ControllerRevision](l.indexer, parent)
	if err != nil {
		return nil, fmt.Errorf("revision: listing revisions of %s/%s: %w", parent.GetNamespace(), parent.GetName(), err)
	}
	out := revs[:0]
	for _, r := range revs {
		if r.Namespace == parent.GetNamespace() {
			out = append(out, r)
		}
	}
	Sort(out)
	return out, nil
}
