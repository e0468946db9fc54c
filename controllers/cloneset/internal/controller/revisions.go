package controller

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/davecgh/go-spew/spew"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// kindCloneSet is the GroupVersionKind revisions point their controllerRef at.
var kindCloneSet = appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet")

// syncRevisions finds or creates the update revision (the CloneSet's current
// template, with OpenKruise's fingerprint of its volumeClaimTemplates),
// re-using an equal older revision on rollback, and resolves the current
// revision (status.currentRevision, or the update revision for a new
// CloneSet).
func (c *Controller) syncRevisions(ctx context.Context, st *syncState) error {
	cs := st.cs
	var err error
	st.Revisions, err = c.SyncRevisions(ctx, workload.RevisionRequest{
		Owner: cs, Kind: kindCloneSet, Template: &cs.Spec.Template,
		CollisionCount: cs.Status.CollisionCount, CurrentRevision: cs.Status.CurrentRevision,
		Annotations: map[string]string{pub.CloneSetVolumeClaimTemplateHashKey: vctHash(cs.Spec.VolumeClaimTemplates)},
	})
	return err
}

// revisionByName returns the CloneSet's revision of that name (or whose
// short hash it is), or nil.
func (st *syncState) revisionByName(name string) *appsv1.ControllerRevision {
	for _, r := range st.History {
		if r.Name == name || revision.ShortHash(r.Name) == name {
			return r
		}
	}
	return nil
}

// vctHash is OpenKruise v1.9's fingerprint of the volumeClaimTemplates a
// revision was created with (annotation
// kruise.io/cloneset-volumeclaimtemplate-hash, pkg/util/volumeclaimtemplate
// PatchVCTemplateHash): "" without templates; otherwise the templates
// reduced to name and spec, sorted by name, JSON-encoded as Kubernetes 1.32
// types encode a PersistentVolumeClaim ("creationTimestamp":null, an empty
// status), and that byte slice printed with spew's %#v (Kubernetes'
// DeepHashObject) into FNV-1a 32, in decimal. Writing OpenKruise's value
// keeps its revisions and Flotilla's comparable under
// RecreatePodWhenChangeVCTInCloneSetGate after a takeover.
func vctHash(vcts []corev1.PersistentVolumeClaim) string {
	if len(vcts) == 0 {
		return ""
	}
	type meta struct {
		Name              string `json:"name,omitempty"`
		CreationTimestamp *int   `json:"creationTimestamp"` // always null
	}
	type claim struct {
		Metadata meta                               `json:"metadata"`
		Spec     corev1.PersistentVolumeClaimSpec   `json:"spec"`
		Status   corev1.PersistentVolumeClaimStatus `json:"status"`
	}
	claims := make([]claim, 0, len(vcts))
	for _, v := range vcts {
		claims = append(claims, claim{Metadata: meta{Name: v.Name}, Spec: v.Spec})
	}
	slices.SortStableFunc(claims, func(a, b claim) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	b, _ := json.Marshal(claims)
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", b)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// legacyVCTHash is the fingerprint Flotilla wrote before it matched
// OpenKruise (FNV-1a of the JSON of name and spec, in template order), still
// on revisions of clusters that ran it.
func legacyVCTHash(vcts []corev1.PersistentVolumeClaim) string {
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

// vctChanged reports whether a pod moving from revision from to target
// needs other volumes (RecreatePodWhenChangeVCTInCloneSetGate). As
// OpenKruise's CanVCTemplateInplaceUpdate, a revision without the
// annotation never forces a recreate. A differing value still means "same
// templates" when target holds OpenKruise's fingerprint of the CloneSet's
// current templates and from the older Flotilla fingerprint of the same.
func vctChanged(from, target *appsv1.ControllerRevision, current []corev1.PersistentVolumeClaim) bool {
	f, okF := from.Annotations[pub.CloneSetVolumeClaimTemplateHashKey]
	g, okG := target.Annotations[pub.CloneSetVolumeClaimTemplateHashKey]
	if !okF || !okG || f == g {
		return false
	}
	return g != vctHash(current) || f != legacyVCTHash(current)
}
