package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func rdWith(t *testing.T, resource any) *appsv1alpha1.ResourceDistribution {
	t.Helper()
	raw, err := json.Marshal(resource)
	require.NoError(t, err)
	return &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: "rd", UID: types.UID("rd-uid"), Generation: 3},
		Spec:       appsv1alpha1.ResourceDistributionSpec{Resource: runtime.RawExtension{Raw: raw}},
	}
}

func secretSource() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "creds", "labels": map[string]any{"app": "x"}, "annotations": map[string]any{"note": "n"}},
		"stringData": map[string]any{"user": "admin"}, "data": map[string]any{"pw": "c2VjcmV0"}}
}

func TestParseSource(t *testing.T) {
	cases := []struct {
		name     string
		resource any
		wantErr  string
	}{
		{"secret", secretSource(), ""},
		{"configmap", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg"}}, ""},
		{"unsupported kind", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}, "unsupported resource kind"},
		{"no name", map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSource(rdWith(t, tc.resource))
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
	src, err := parseSource(rdWith(t, secretSource()))
	require.NoError(t, err)
	sec := src.obj.(*corev1.Secret)
	assert.Equal(t, map[string][]byte{"user": []byte("admin"), "pw": []byte("secret")}, sec.Data, "stringData folds into data as the API server stores it")
	assert.Equal(t, corev1.SecretTypeOpaque, sec.Type)
	assert.Len(t, src.hash, 64)
}

// TestCopyDiff: a copy is written only when it differs from what it should be.
func TestCopyDiff(t *testing.T) {
	rd := rdWith(t, secretSource())
	src, err := parseSource(rd)
	require.NoError(t, err)
	want := newDesiredMeta(rd, src)
	fresh := newCopy(src, "ns1", want).(*corev1.Secret)
	assert.Equal(t, map[string]string{"app": "x", CopyLabel: "true"}, fresh.Labels)
	assert.Equal(t, src.hash, fresh.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation])
	assert.Equal(t, "rd", fresh.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation])
	assert.Equal(t, "n", fresh.Annotations["note"])
	require.Len(t, fresh.OwnerReferences, 1)
	assert.True(t, *fresh.OwnerReferences[0].Controller)
	assert.Equal(t, "apps.kruise.io/v1alpha1", fresh.OwnerReferences[0].APIVersion)

	cases := []struct {
		name   string
		mutate func(s *corev1.Secret)
		want   bool
	}{
		{"up to date", func(*corev1.Secret) {}, false},
		{"extra label and annotation kept, not a change", func(s *corev1.Secret) { s.Labels["other"] = "1"; s.Annotations["other"] = "1" }, false},
		{"data edited", func(s *corev1.Secret) { s.Data["pw"] = []byte("changed") }, true},
		{"key added", func(s *corev1.Secret) { s.Data["extra"] = []byte("x") }, true},
		{"old hash", func(s *corev1.Secret) { s.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation] = "old" }, true},
		{"copy label removed", func(s *corev1.Secret) { delete(s.Labels, CopyLabel) }, true},
		{"source label changed", func(s *corev1.Secret) { s.Labels["app"] = "y" }, true},
		{"controller of an earlier distribution of the same name", func(s *corev1.Secret) { s.OwnerReferences[0].UID = "old-uid" }, true},
		{"type changed", func(s *corev1.Secret) { s.Type = corev1.SecretTypeDockerConfigJson }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			existing := fresh.DeepCopy()
			tc.mutate(existing)
			assert.Equal(t, tc.want, needsUpdate(existing, src.obj, want))
			if tc.want {
				upd := updatedCopy(existing, src.obj, want)
				assert.False(t, needsUpdate(upd, src.obj, want), "the update brings it up to date")
				require.Len(t, upd.GetOwnerReferences(), 1)
				assert.Equal(t, rd.UID, upd.GetOwnerReferences()[0].UID)
			}
		})
	}
}
