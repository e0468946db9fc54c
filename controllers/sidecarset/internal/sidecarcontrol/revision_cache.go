package sidecarcontrol

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// RevisionIndex is the informer index IndexRevisionBySidecarSet builds.
const RevisionIndex = "sidecarset-name"

// IndexRevisionBySidecarSet indexes ControllerRevisions by their
// kruise.io/sidecarset-name label.
func IndexRevisionBySidecarSet(obj any) ([]string, error) {
	r, ok := obj.(*appsv1.ControllerRevision)
	if !ok || r.Labels[RevisionNameLabel] == "" {
		return nil, nil
	}
	return []string{r.Labels[RevisionNameLabel]}, nil
}

// RevisionIndexer is a RevisionSource over an informer of the controller
// namespace's ControllerRevisions carrying RevisionIndex. The revisions are
// the cache's: never modify them.
type RevisionIndexer struct {
	Indexer cache.Indexer
}

// SidecarSetRevisions implements RevisionSource.
func (r RevisionIndexer) SidecarSetRevisions(setName string) ([]*appsv1.ControllerRevision, error) {
	objs, err := r.Indexer.ByIndex(RevisionIndex, setName)
	if err != nil {
		return nil, fmt.Errorf("revisions of sidecarset %s: %w", setName, err)
	}
	out := make([]*appsv1.ControllerRevision, 0, len(objs))
	for _, o := range objs {
		if rev, ok := o.(*appsv1.ControllerRevision); ok {
			out = append(out, rev)
		}
	}
	return out, nil
}
