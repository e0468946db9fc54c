package revision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// existing returns a stored revision named name holding data, controlled by
// the owner with UID owner ("" = orphan).
func existing(name, data string, owner types.UID) *appsv1.ControllerRevision {
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "42"},
		Data:       runtime.RawExtension{Raw: []byte(data)},
		Revision:   1,
	}
	if owner != "" {
		r.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: owner, Controller: ptr.To(true),
		}}
	}
	return r
}

// recorder is a Control for Resolve's tests: it records the requests asked
// of it ("create", "update", "delete"; none for an UpdateRevision to the
// number the revision already has, as the real one) and answers as the API
// server would with nothing in the way (a create gets the name of its data
// and collision count). kit/revision/revisionclient tests the real one.
type recorder struct{ verbs []string }

func newRecorder() *recorder { return &recorder{verbs: []string{}} }

func (r *recorder) Create(_ context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	r.verbs = append(r.verbs, "create")
	out := rev.DeepCopy()
	out.Namespace = parent.GetNamespace()
	hash := Hash(out.Data.Raw, collisionCount)
	out.Name = Name(parent.GetName(), hash)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[HashLabel] = hash
	return out, nil
}

func (r *recorder) UpdateRevision(_ context.Context, rev *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error) {
	out := rev.DeepCopy()
	if out.Revision != newRevision {
		r.verbs = append(r.verbs, "update")
		out.Revision = newRevision
	}
	return out, nil
}

func (r *recorder) Delete(context.Context, *appsv1.ControllerRevision) error {
	r.verbs = append(r.verbs, "delete")
	return nil
}
