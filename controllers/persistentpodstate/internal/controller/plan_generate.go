package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
)

// genVerb is what keeping a StatefulSet's generated PersistentPodState
// takes.
type genVerb int

const (
	genNone genVerb = iota
	genCreate
	genUpdate
	genDelete
	// genForeign: the StatefulSet asks for one, and a PersistentPodState of
	// its name exists that it does not control: left alone, reported.
	genForeign
)

// genAction is planGenerate's decision; want is the object to create, or
// the spec to write (update).
type genAction struct {
	verb genVerb
	want *appsv1alpha1.PersistentPodState
}

// planGenerate decides, for a StatefulSet w (nil: gone, the garbage
// collector deletes what it controlled) and the PersistentPodState of its
// name (nil: none), as OpenKruise does: with auto-generation on and a
// topology annotation set, the generated object is created or its spec
// brought back to the annotations'; auto-generation on without either
// topology annotation changes nothing; off, the generated object is
// deleted. Flotilla updates and deletes only an object the StatefulSet
// controls (OpenKruise takes over any of that name).
func planGenerate(w *workload, existing *appsv1alpha1.PersistentPodState) genAction {
	if w == nil || w.deleting() {
		return genAction{}
	}
	ann := w.meta.Annotations
	ours := existing != nil && controlledBy(existing, w)
	if ann[appsv1alpha1.AnnotationAutoGeneratePersistentPodState] != "true" {
		if ours {
			return genAction{verb: genDelete, want: existing}
		}
		return genAction{}
	}
	if ann[appsv1alpha1.AnnotationRequiredPersistentTopology] == "" && ann[appsv1alpha1.AnnotationPreferredPersistentTopology] == "" {
		return genAction{}
	}
	want := generated(w)
	switch {
	case existing == nil:
		return genAction{verb: genCreate, want: want}
	case equality.Semantic.DeepEqual(existing.Spec, want.Spec):
		return genAction{}
	case !ours:
		return genAction{verb: genForeign, want: existing}
	}
	upd := existing.DeepCopy()
	upd.Spec = want.Spec
	return genAction{verb: genUpdate, want: upd}
}

func controlledBy(pps *appsv1alpha1.PersistentPodState, w *workload) bool {
	ref := metav1.GetControllerOfNoCopy(pps)
	return ref != nil && ref.UID == w.meta.UID
}

// generated is the PersistentPodState the annotations of w ask for: named
// after w, controlled by it, the required keys as the required term, the
// preferred keys as one term of weight 100, the annotation keys recorded.
func generated(w *workload) *appsv1alpha1.PersistentPodState {
	ann := w.meta.Annotations
	pps := &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{
			Name:      w.meta.Name,
			Namespace: w.meta.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: w.apiVersion, Kind: topology.KindStatefulSet,
				Name: w.meta.Name, UID: w.meta.UID, Controller: ptr.To(true)}},
		},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference: appsv1alpha1.PersistentPodStateTargetReference{APIVersion: w.apiVersion, Kind: topology.KindStatefulSet, Name: w.meta.Name},
		},
	}
	if v := ann[appsv1alpha1.AnnotationRequiredPersistentTopology]; v != "" {
		pps.Spec.RequiredPersistentTopology = &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: strings.Split(v, ",")}
	}
	if v := ann[appsv1alpha1.AnnotationPersistentPodAnnotations]; v != "" {
		for _, k := range strings.Split(v, ",") {
			pps.Spec.PersistentPodAnnotations = append(pps.Spec.PersistentPodAnnotations, appsv1alpha1.PersistentPodAnnotation{Key: k})
		}
	}
	if v := ann[appsv1alpha1.AnnotationPreferredPersistentTopology]; v != "" {
		pps.Spec.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: strings.Split(v, ",")}}}
	}
	return pps
}
