package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func claimTemplate(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"ignored": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// vctHash mirrors OpenKruise v1.9 pkg/util/volumeclaimtemplate
// PatchVCTemplateHash; the pinned value was computed once by this
// implementation and agrees with the takeover test's independent fixture
// (kit/testenv/openkruise VCTHash, which OpenKruise-labelled revisions carry there).
func TestVCTHash(t *testing.T) {
	assert.Equal(t, "", vctHash(nil), "no templates: empty, as OpenKruise")
	one := []corev1.PersistentVolumeClaim{claimTemplate("data", "1Mi")}
	assert.Equal(t, vctHashPinned, vctHash(one))
	two := []corev1.PersistentVolumeClaim{claimTemplate("logs", "1Mi"), claimTemplate("data", "1Mi")}
	swapped := []corev1.PersistentVolumeClaim{two[1], two[0]}
	assert.Equal(t, vctHash(two), vctHash(swapped), "sorted by name")
	assert.NotEqual(t, vctHash(one), vctHash([]corev1.PersistentVolumeClaim{claimTemplate("data", "2Mi")}))
	noLabels := claimTemplate("data", "1Mi")
	noLabels.Labels = nil
	assert.Equal(t, vctHash(one), vctHash([]corev1.PersistentVolumeClaim{noLabels}), "only name and spec count")
}

const vctHashPinned = "679419538"

func TestVCTChanged(t *testing.T) {
	data := []corev1.PersistentVolumeClaim{claimTemplate("data", "1Mi")}
	bigger := []corev1.PersistentVolumeClaim{claimTemplate("data", "2Mi")}
	rev := func(hash *string) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{}
		if hash != nil {
			r.Annotations = map[string]string{pub.CloneSetVolumeClaimTemplateHashKey: *hash}
		}
		return r
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name         string
		from, target *string
		current      []corev1.PersistentVolumeClaim
		want         bool
	}{
		{"same OpenKruise fingerprint", s(vctHash(data)), s(vctHash(data)), data, false},
		{"no annotation on the pod's revision (OpenKruise: never recreate)", nil, s(vctHash(data)), data, false},
		{"no annotation on the target", s(vctHash(data)), nil, data, false},
		{"templates changed", s(vctHash(data)), s(vctHash(bigger)), bigger, true},
		{"older Flotilla fingerprint of the same templates", s(legacyVCTHash(data)), s(vctHash(data)), data, false},
		{"older Flotilla fingerprint of other templates", s(legacyVCTHash(data)), s(vctHash(bigger)), bigger, true},
		{"older Flotilla, no templates", s(legacyVCTHash(nil)), s(""), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, vctChanged(rev(tc.from), rev(tc.target), tc.current))
		})
	}
}
