package apis_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/apis/testing/seeds"
)

func newScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	require.NoError(t, appsv1alpha1.AddToScheme(s))
	require.NoError(t, appsv1beta1.AddToScheme(s))
	require.NoError(t, policyv1alpha1.AddToScheme(s))
	return s
}

func loadSeeds(t *testing.T) []seeds.Example {
	t.Helper()
	dir, err := seeds.Dir()
	require.NoError(t, err, "seed documents are required for this test")
	exs, err := seeds.Load(dir)
	require.NoError(t, err)
	return exs
}

// roundTrip decodes y strictly into the Go type of its kind and encodes it
// back, returning the generic form of both sides.
func roundTrip(t *testing.T, s *runtime.Scheme, y string) (in, out map[string]interface{}) {
	t.Helper()
	require.NoError(t, yaml.Unmarshal([]byte(y), &in))
	av, _ := in["apiVersion"].(string)
	kind, _ := in["kind"].(string)
	gv, err := schema.ParseGroupVersion(av)
	require.NoError(t, err)
	obj, err := s.New(gv.WithKind(kind))
	require.NoError(t, err, "kind %s %s is not served", av, kind)
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), obj), "strict decoding (unknown fields are errors)")
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	return in, out
}

func TestSeedExamplesRoundTrip(t *testing.T) {
	s := newScheme(t)
	all := loadSeeds(t)
	for _, e := range all {
		if reason, ok := seeds.Skipped[e.ID()]; ok {
			t.Run(e.ID(), func(t *testing.T) { t.Skipf("%s:%d: %s", e.File, e.Line, reason) })
		}
	}
	exs, err := seeds.InScope(all)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(exs), 9, "expected at least 9 in-scope seed examples")
	for _, e := range exs {
		t.Run(e.ID(), func(t *testing.T) {
			in, out := roundTrip(t, s, e.Cleaned)
			assert.Empty(t, seeds.Missing(in, out), "fields lost in the round trip")
		})
	}
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	s := newScheme(t)
	obj, err := s.New(appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
	require.NoError(t, err)
	err = yaml.UnmarshalStrict([]byte("apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nspec:\n  updateStrategy:\n    partitions: 1\n"), obj)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "partitions"), err.Error())
}

func TestPlaceholderRemoval(t *testing.T) {
	in := "spec:\n  ...\n  a: 1\n  b: ...\n  list:\n  - ...\n  # ...\n"
	out, changed := seeds.RemovePlaceholders(in)
	assert.True(t, changed)
	assert.Equal(t, "spec:\n  a: 1\n  b:\n  list:\n  # ...\n", out)
}

func TestMissingDetectsLostFields(t *testing.T) {
	want := map[string]interface{}{"spec": map[string]interface{}{"a": "x", "l": []interface{}{map[string]interface{}{"k": 1.0}}, "elided": nil}}
	assert.Empty(t, seeds.Missing(want, map[string]interface{}{"spec": map[string]interface{}{"a": "x", "b": 2.0, "l": []interface{}{map[string]interface{}{"k": 1.0, "z": true}}}}))
	assert.NotEmpty(t, seeds.Missing(want, map[string]interface{}{"spec": map[string]interface{}{"a": "y", "l": []interface{}{map[string]interface{}{"k": 1.0}}}}))
	assert.NotEmpty(t, seeds.Missing(want, map[string]interface{}{"spec": map[string]interface{}{"a": "x", "l": []interface{}{map[string]interface{}{}}}}))
}
