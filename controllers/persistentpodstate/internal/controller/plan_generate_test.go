package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func annotated(apiVersion string, ann map[string]string) *workload {
	return &workload{meta: &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Annotations: ann}, apiVersion: apiVersion, replicas: 3}
}

func TestGenerated(t *testing.T) {
	w := annotated("apps.kruise.io/v1beta1", map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     "topology.kubernetes.io/zone",
		appsv1alpha1.AnnotationPreferredPersistentTopology:    "kubernetes.io/hostname,rack",
		appsv1alpha1.AnnotationPersistentPodAnnotations:       "ip",
	})
	got := generated(w)
	assert.Equal(t, "web", got.Name)
	assert.Equal(t, "ns", got.Namespace)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}, got.OwnerReferences)
	assert.Equal(t, appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"topology.kubernetes.io/zone"}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"kubernetes.io/hostname", "rack"}}}},
		PersistentPodAnnotations: []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}},
	}, got.Spec)
}

func TestPlanGenerate(t *testing.T) {
	on := map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true", appsv1alpha1.AnnotationRequiredPersistentTopology: "zone"}
	w := annotated("apps/v1", on)
	ours := generated(w)
	stale := ours.DeepCopy()
	stale.Spec.RequiredPersistentTopology.NodeTopologyKeys = []string{"old"}
	foreign := stale.DeepCopy()
	foreign.OwnerReferences = nil
	foreignSame := ours.DeepCopy()
	foreignSame.OwnerReferences = nil
	gone := annotated("apps/v1", on)
	gone.meta.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		w        *workload
		existing *appsv1alpha1.PersistentPodState
		want     genVerb
	}{
		{"annotations on, none yet: create", w, nil, genCreate},
		{"annotations on, up to date: nothing", w, ours, genNone},
		{"annotations changed: update the generated one", w, stale, genUpdate},
		{"a PersistentPodState of that name not controlled by the StatefulSet: left alone, reported", w, foreign, genForeign},
		{"one not controlled but equal: nothing to report", w, foreignSame, genNone},
		{"auto on without topology annotations: nothing (as OpenKruise)", annotated("apps/v1", map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true"}), nil, genNone},
		{"auto off: the generated one is deleted", annotated("apps/v1", nil), ours, genDelete},
		{"auto off: one it does not control is kept", annotated("apps/v1", nil), foreign, genNone},
		{"auto \"false\": deleted", annotated("apps/v1", map[string]string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "false"}), ours, genDelete},
		{"StatefulSet gone: the garbage collector's", nil, ours, genNone},
		{"StatefulSet being deleted: nothing", gone, nil, genNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planGenerate(tc.w, tc.existing)
			assert.Equal(t, tc.want, got.verb)
			if got.verb == genUpdate {
				assert.Equal(t, ours.Spec, got.want.Spec)
				assert.Equal(t, stale.ResourceVersion, got.want.ResourceVersion)
			}
		})
	}
}
