package revision

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func webTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.25"}},
		},
	}
}

// webPatch is TemplatePatch(webTemplate()), written out by hand.
const webPatch = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.25","name":"nginx","resources":{}}]}}}}`

func TestTemplatePatch(t *testing.T) {
	grace := int64(30)
	tests := []struct {
		name     string
		template *corev1.PodTemplateSpec
		want     string
	}{
		{
			name:     "zero template",
			template: &corev1.PodTemplateSpec{},
			want:     `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null},"spec":{"containers":null}}}}`,
		},
		{
			name:     "labels and one container",
			template: webTemplate(),
			want:     webPatch,
		},
		{
			name: "keys sorted at every level, numbers and quantities kept, HTML escaped",
			template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"z": "1", "a": "2", "m": "3"},
					Annotations: map[string]string{"note": "<a&b>"},
				},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					RestartPolicy:                 corev1.RestartPolicyAlways,
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "app:v2",
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("500m")},
						},
					}},
				},
			},
			want: `{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"note":"\u003ca\u0026b\u003e"},"creationTimestamp":null,"labels":{"a":"2","m":"3","z":"1"}},` +
				`"spec":{"containers":[{"image":"app:v2","name":"app","resources":{"limits":{"cpu":"500m","memory":"128Mi"}}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TemplatePatch(tt.template)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			again, err := TemplatePatch(tt.template)
			require.NoError(t, err)
			assert.Equal(t, got, again, "same input must give the same bytes")
		})
	}
}

func TestTemplatePatchNil(t *testing.T) {
	_, err := TemplatePatch(nil)
	assert.Error(t, err)
}

// The data depends only on the template's content: not on the order maps
// were filled in, and not on fields a decoder drops (unknown fields in a
// stored, schemaless template).
func TestTemplatePatchStable(t *testing.T) {
	fromJSON := func(t *testing.T, s string) *corev1.PodTemplateSpec {
		t.Helper()
		var tpl corev1.PodTemplateSpec
		require.NoError(t, json.Unmarshal([]byte(s), &tpl))
		return &tpl
	}
	base := `{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.25"}]}}`
	tests := []struct {
		name string
		json string
	}{
		{"reference", base},
		{"fields in another order", `{"spec":{"containers":[{"image":"nginx:1.25","name":"nginx"}]},"metadata":{"labels":{"app":"web"}}}`},
		{"unknown template field", `{"metadata":{"labels":{"app":"web"}},"bogus":{"x":1},"spec":{"containers":[{"name":"nginx","image":"nginx:1.25"}]}}`},
		{"unknown container and metadata fields", `{"metadata":{"labels":{"app":"web"},"extra":"y"},"spec":{"containers":[{"name":"nginx","image":"nginx:1.25","sidecarMagic":true}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TemplatePatch(fromJSON(t, tt.json))
			require.NoError(t, err)
			assert.Equal(t, webPatch, string(got))
		})
	}

	t.Run("map insertion order", func(t *testing.T) {
		keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		forward, backward := map[string]string{}, map[string]string{}
		for i := range keys {
			forward[keys[i]] = keys[i]
			backward[keys[len(keys)-1-i]] = keys[len(keys)-1-i]
		}
		a, err := TemplatePatch(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: forward, Annotations: backward}})
		require.NoError(t, err)
		for range 20 {
			b, err := TemplatePatch(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: backward, Annotations: forward}})
			require.NoError(t, err)
			require.Equal(t, string(a), string(b))
		}
	})

	t.Run("a real change changes the bytes", func(t *testing.T) {
		changed := webTemplate()
		changed.Spec.Containers[0].Image = "nginx:1.26"
		got, err := TemplatePatch(changed)
		require.NoError(t, err)
		assert.NotEqual(t, webPatch, string(got))
	})

	t.Run("input not modified", func(t *testing.T) {
		tpl := webTemplate()
		_, err := TemplatePatch(tpl)
		require.NoError(t, err)
		assert.Equal(t, webTemplate(), tpl)
	})
}
