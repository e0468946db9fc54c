package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

var sidecarSetKind = appsv1alpha1.SchemeGroupVersion.WithKind("SidecarSet")

// syncRevisions makes sure the SidecarSet's current version has a
// ControllerRevision in the controller's namespace (re-numbering an equal
// older one on rollback), and deletes the oldest ones beyond
// revisionHistoryLimit that no pod and no injectionStrategy.revision refers to.
func (c *Controller) syncRevisions(ctx context.Context, set *appsv1alpha1.SidecarSet, pods []*corev1.Pod) (*appsv1.ControllerRevision, int32, error) {
	cached, err := c.revisions.SidecarSetRevisions(set.Name)
	if err != nil {
		return nil, 0, err
	}
	revs := slices.Clone(cached)
	revision.Sort(revs)
	data, err := sidecarcontrol.RevisionData(set)
	if err != nil {
		return nil, 0, err
	}
	collision := ptr.Deref(set.Status.CollisionCount, 0)
	parent := revisionParent(set, c.systemNS)
	lbls := maps.Clone(set.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[sidecarcontrol.RevisionNameLabel] = set.Name
	want := revision.New(parent, sidecarSetKind, lbls, data, revision.NextRevisionNumber(revs), &collision)
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[sidecarcontrol.HashAnnotation] = sidecarcontrol.Hash(set)
	want.Annotations[sidecarcontrol.HashWithoutImageAnnotation] = sidecarcontrol.HashWithoutImage(set)
	res, err := revision.Resolve(ctx, c.revControl, parent, want, revs, &collision)
	if err != nil {
		return nil, collision, fmt.Errorf("sidecarset %s: %w", set.Name, err)
	}

	live := sets.New(res.Update.Name)
	for _, p := range pods {
		if r := sidecarcontrol.PodControllerRevision(p, set.Name); r != "" {
			live.Insert(r)
		}
	}
	if pinned, err := sidecarcontrol.PinnedRevision(set, c.revisions); err == nil && pinned != nil {
		live.Insert(pinned.Name)
	}
	for _, r := range revisionsToDelete(res.Revisions, live, int(ptr.Deref(set.Spec.RevisionHistoryLimit, 10))) {
		if err := c.revControl.Delete(ctx, r); err != nil {
			return res.Update, collision, fmt.Errorf("sidecarset %s: delete old revision %s: %w", set.Name, r.Name, err)
		}
	}
	return res.Update, collision, nil
}

// revisionParent stands for the cluster-scoped SidecarSet in the namespace
// its revisions live in: names and the controllerRef come from it.
func revisionParent(set *appsv1alpha1.SidecarSet, ns string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: set.Name, Namespace: ns, UID: set.UID, Annotations: set.Annotations}
}

// revisionsToDelete keeps at most limit (at least 1) revisions in all, as
// OpenKruise counts: the oldest ones (revs are sorted oldest first) go
// first, never the newest one nor one in live. When live revisions alone
// exceed the limit, more than limit remain (OpenKruise then reports an
// error every sync; nothing a retry could fix, so Flotilla does not).
func revisionsToDelete(revs []*appsv1.ControllerRevision, live sets.Set[string], limit int) []*appsv1.ControllerRevision {
	excess := len(revs) - max(limit, 1)
	var out []*appsv1.ControllerRevision
	for i := 0; i < len(revs)-1 && excess > 0; i++ {
		if !live.Has(revs[i].Name) {
			out = append(out, revs[i])
			excess--
		}
	}
	return out
}
