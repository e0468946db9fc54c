package revision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Control is the narrow write interface to ControllerRevisions. It never
// mutates the objects it is given (they may come from an informer cache).
// The implementation over client-go's clientset is
// kit/revision/revisionclient.New.
type Control interface {
	// Create saves rev (normally from New) in parent's namespace under the
	// name Name(parent, Hash(rev.Data.Raw, collisionCount)). When that name
	// is taken by a revision with the same data that parent controls, that
	// revision is returned as-is. When it is taken by anything else,
	// *collisionCount is incremented and the name (and HashLabel) recomputed,
	// up to a bounded number of attempts. The caller must persist
	// *collisionCount in the workload's status.collisionCount, even on error.
	// collisionCount must not be nil.
	Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error)
	// UpdateRevision sets rev's .revision to newRevision (re-using an older
	// revision whose data equals the template being rolled back to),
	// retrying on conflict against the latest object. It writes nothing if
	// the revision number is already newRevision.
	UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error)
	// Delete deletes rev, only if the object of that name still has rev's
	// UID. A revision that is already gone is not an error.
	Delete(ctx context.Context, rev *appsv1.ControllerRevision) error
}
