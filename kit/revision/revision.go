package revision

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// New returns an unsaved ControllerRevision of parent holding data:
//
//   - name Name(parent, Hash(data, collisionCount)), parent's namespace;
//   - labels: a copy of templateLabels plus HashLabel;
//   - annotations: a copy of all of parent's annotations;
//   - one ownerReference, the controllerRef (controller and
//     blockOwnerDeletion true) to parent of kind parentKind;
//   - .revision = revision.
//
// Nothing passed in is retained: maps and data are copied.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string,
	data []byte, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	hash := Hash(data, collisionCount)
	labels := make(map[string]string, len(templateLabels)+1)
	maps.Copy(labels, templateLabels)
	labels[HashLabel] = hash
	var annotations map[string]string
	if a := parent.GetAnnotations(); len(a) > 0 {
		annotations = maps.Clone(a)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(parent.GetName(), hash),
			Namespace:       parent.GetNamespace(),
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     runtime.RawExtension{Raw: bytes.Clone(data)},
		Revision: revision,
	}
}

// FindEqual returns the revisions whose data bytes equal data, in the order
// given. Pass the output of Sort/Lister.List to have the newest last.
func FindEqual(revisions []*appsv1.ControllerRevision, data []byte) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, data) {
			out = append(out, r)
		}
	}
	return out
}

// NextRevisionNumber returns the .revision for a new (or re-used) revision:
// one more than the highest in revisions, or 1 when there are none.
func NextRevisionNumber(revisions []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revisions {
		highest = max(highest, r.Revision)
	}
	return highest + 1
}

// Sort orders revisions oldest first: by .revision, then creation time, then
// name. It reorders the slice only; the objects are not touched.
func Sort(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, compare)
}

func compare(a, b *appsv1.ControllerRevision) int {
	if a.Revision != b.Revision {
		if a.Revision < b.Revision {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Truncate returns the revisions to delete so that at most limit revisions
// that are not live remain. live holds the revisions that must be kept: the
// caller puts the current and update revision names in it plus the
// controller-revision-hash label of every pod; a revision is live when live
// contains its name or its ShortHash (pods labelled under CloneSetShortHash).
// Among the rest, the lowest .revision (then oldest, then name) goes first.
// A negative limit counts as 0. Neither revisions nor its objects are
// modified.
func Truncate(revisions []*appsv1.ControllerRevision, live sets.Set[string], limit int) []*appsv1.ControllerRevision {
	var history []*appsv1.ControllerRevision
	for _, r := range revisions {
		if live.Has(r.Name) || live.Has(ShortHash(r.Name)) {
			continue
		}
		history = append(history, r)
	}
	limit = max(limit, 0)
	if len(history) <= limit {
		return nil
	}
	Sort(history)
	return history[:len(history)-limit]
}
