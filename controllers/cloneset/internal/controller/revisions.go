package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// kindCloneSet is the GroupVersionKind revisions point their controllerRef at.
var kindCloneSet = appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet")

// syncRevisions finds or creates the update revision (the CloneSet's current
// template), re-using an equal older revision on rollback, and resolves the
// current revision (status.currentRevision, or the update revision for a new
// CloneSet).
func (c *Controller) syncRevisions(ctx context.Context, st *syncState) error {
	cs := st.cs
	data, err := revision.TemplatePatch(&cs.Spec.Template)
	if err != nil {
		return fmt.Errorf("encode template: %w", err)
	}
	st.collisionCount = ptr.Deref(cs.Status.CollisionCount, 0)
	want := revision.New(cs, kindCloneSet, cs.Spec.Template.Labels, data, revision.NextRevisionNumber(st.revisions), &st.collisionCount)
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[pub.CloneSetVolumeClaimTemplateHashKey] = vctHash(cs.Spec.VolumeClaimTemplates)
	res, err := revision.Resolve(ctx, c.revControl, cs, want, st.revisions, &st.collisionCount)
	if err != nil {
		return err
	}
	st.update, st.revisions = res.Update, res.Revisions
	if res.Written {
		c.rvExp.Expect(st.update)
	}
	for _, r := range st.revisions {
		if r.Name == cs.Status.CurrentRevision {
			st.current = r
		}
	}
	if st.current == nil {
		st.current = st.update
	}
	return nil
}

// revisionByName returns the CloneSet's revision of that name (or whose
// short hash it is), or nil.
func (st *syncState) revisionByName(name string) *appsv1.ControllerRevision {
	for _, r := range st.revisions {
		if r.Name == name || revision.ShortHash(r.Name) == name {
			return r
		}
	}
	return nil
}

// vctHash fingerprints the volumeClaimTemplates a revision was created with
// (annotation kruise.io/cloneset-volumeclaimtemplate-hash).
func vctHash(vcts []corev1.PersistentVolumeClaim) string {
	type claim struct {
		Name string                           `json:"name"`
		Spec corev1.PersistentVolumeClaimSpec `json:"spec"`
	}
	claims := make([]claim, 0, len(vcts))
	for _, v := range vcts {
		claims = append(claims, claim{Name: v.Name, Spec: v.Spec})
	}
	b, _ := json.Marshal(claims)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}
