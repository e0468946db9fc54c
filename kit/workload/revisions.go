package workload

import (
	"context"
	"fmt"
	"iter"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// RevisionRequest describes the update revision a workload wants.
type RevisionRequest struct {
	Owner    metav1.Object
	Kind     schema.GroupVersionKind
	Template *corev1.PodTemplateSpec
	// CollisionCount and CurrentRevision are the workload's status fields
	// ("" current: the update revision is current).
	CollisionCount  *int32
	CurrentRevision string
	// Annotations are added to a new revision's (the owner's).
	Annotations map[string]string
	// HashLabel: the revision carries its hash in the
	// controller-revision-hash label, as its pods do (DaemonSet).
	HashLabel bool
}

// Revisions is a workload's history after SyncRevisions.
type Revisions struct {
	// History oldest first; Update is the template's, Current the status's (or
	// Update).
	History         []*appsv1.ControllerRevision
	Current, Update *appsv1.ControllerRevision
	CollisionCount  int32
}

// SyncRevisions lists the owner's revisions and finds or creates the update
// revision (re-using, and re-numbering, an equal older one on rollback;
// kit/revision.Resolve), recording a write in RV so the next sync waits for
// the cache to show it.
func (b *Base) SyncRevisions(ctx context.Context, req RevisionRequest) (Revisions, error) {
	history, err := b.Revisions.List(req.Owner)
	if err != nil {
		return Revisions{}, fmt.Errorf("list revisions: %w", err)
	}
	data, err := revision.TemplatePatch(req.Template)
	if err != nil {
		return Revisions{}, fmt.Errorf("encode template: %w", err)
	}
	r := Revisions{CollisionCount: ptr.Deref(req.CollisionCount, 0)}
	labels := req.Template.Labels
	if req.HashLabel {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[pub.ControllerRevisionHashLabelKey] = revision.Hash(data, &r.CollisionCount)
	}
	want := revision.New(req.Owner, req.Kind, labels, data, revision.NextRevisionNumber(history), &r.CollisionCount)
	if len(req.Annotations) > 0 {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		maps.Copy(want.Annotations, req.Annotations)
	}
	res, err := revision.Resolve(ctx, b.RevControl, req.Owner, want, history, &r.CollisionCount)
	if err != nil {
		return Revisions{}, err
	}
	r.Update, r.History, r.Current = res.Update, res.Revisions, res.Update
	if res.Written {
		b.RV.Expect(r.Update)
	}
	for _, rev := range r.History {
		if req.CurrentRevision != "" && rev.Name == req.CurrentRevision {
			r.Current = rev
		}
	}
	return r, nil
}

// TruncateHistory deletes the oldest revisions beyond limit (nil: 10) that
// are neither current, update, nor run by one of pods.
func (b *Base) TruncateHistory(ctx context.Context, r Revisions, limit *int32, pods iter.Seq[*corev1.Pod]) error {
	live := sets.New(r.Update.Name)
	if r.Current != nil {
		live.Insert(r.Current.Name)
	}
	for p := range pods {
		if h := p.Labels[pub.ControllerRevisionHashLabelKey]; h != "" {
			live.Insert(h)
		}
	}
	for _, rev := range revision.Truncate(r.History, live, int(ptr.Deref(limit, 10))) {
		if err := b.RevControl.Delete(ctx, rev); err != nil {
			return fmt.Errorf("truncate history: %w", err)
		}
	}
	return nil
}
