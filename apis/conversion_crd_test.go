package apis_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/apis/apps/conversion"
	"github.com/flotilla-dev/flotilla/apis/testing/fixtures"
)

// Objects valid at one version convert into objects the other version's
// CRD admits (schema, enums, CEL), whose fields all exist in that version's
// Go type (strict decoding), and convert back unchanged. This ties the
// conversion's field names to the generated CRDs and the Go types.
func TestConvertedObjectsAreValidAtTheOtherVersion(t *testing.T) {
	crds := loadCRDs(t)
	s := newScheme(t)
	type tc struct {
		name, version, kind string
		mutate              func(o fixtures.Obj)
	}
	cases := []tc{
		{"ads surging", "v1alpha1", "DaemonSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.updateStrategy", fixtures.Obj{"type": "RollingUpdate", "rollingUpdate": fixtures.Obj{"rollingUpdateType": "Surging"}})
		}},
		{"ads surging maxSurge 20%", "v1alpha1", "DaemonSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.updateStrategy", fixtures.Obj{"type": "RollingUpdate", "rollingUpdate": fixtures.Obj{"rollingUpdateType": "Surging", "maxSurge": "20%", "partition": 3}})
		}},
		{"ads progressive, status", "v1alpha1", "DaemonSet", func(o fixtures.Obj) {
			fixtures.Set(o, "metadata.annotations", fixtures.Obj{"daemonset.kruise.io/progressive-create-pod": "true", "other": "x"})
			fixtures.Set(o, "status", fixtures.Obj{"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1,
				"numberReady": 1, "observedGeneration": 1, "updatedNumberScheduled": 1, "numberAvailable": 1, "daemonSetHash": "abc"})
		}},
		{"ads partitionedScaling, status", "v1beta1", "DaemonSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.scaleStrategy", fixtures.Obj{"partitionedScaling": true})
			fixtures.Set(o, "status", fixtures.Obj{"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1,
				"numberReady": 1, "observedGeneration": 1, "updatedNumberScheduled": 1, "numberAvailable": 1, "updateRevision": "abc"})
		}},
		{"ads empty scaleStrategy", "v1beta1", "DaemonSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.scaleStrategy", fixtures.Obj{})
		}},
		{"sidecarset namespace, custom version", "v1alpha1", "SidecarSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.namespace", "team-a")
			fixtures.Set(o, "metadata.labels", fixtures.Obj{"apps.kruise.io/sidecarset-custom-version": "v2"})
		}},
		{"sidecarset customVersion, selector", "v1beta1", "SidecarSet", func(o fixtures.Obj) {
			fixtures.Set(o, "spec.customVersion", "v3")
			fixtures.Set(o, "spec.namespaceSelector", fixtures.Obj{"matchLabels": fixtures.Obj{"env": "prod"}})
		}},
	}
	for _, kind := range []string{"AdvancedCronJob", "BroadcastJob", "ImagePullJob", "NodeImage", "StatefulSet"} {
		cases = append(cases, tc{name: kind + " minimal", version: "v1alpha1", kind: kind}, tc{name: kind + " minimal", version: "v1beta1", kind: kind})
	}
	for _, c := range cases {
		t.Run(c.version+"/"+c.name, func(t *testing.T) {
			from, ok := fixtures.LookupKind("apps.kruise.io/"+c.version, c.kind)
			require.True(t, ok)
			other := "v1beta1"
			if c.version == "v1beta1" {
				other = "v1alpha1"
			}
			to, ok := fixtures.LookupKind("apps.kruise.io/"+other, c.kind)
			require.True(t, ok)

			obj := jsonCopy(fixtures.Minimal(from, "demo", "default"))
			if c.mutate != nil {
				c.mutate(obj)
				obj = jsonCopy(obj)
			}
			require.Empty(t, versionFor(t, crds, from).admit(obj, nil).ToAggregate(), "the input must be valid at %s", c.version)

			u := &unstructured.Unstructured{Object: jsonCopy(obj)}
			require.NoError(t, conversion.Convert(u, to.APIVersion()))
			converted := jsonCopy(u.Object)
			strictDecode(t, s, to, converted)
			admitted := jsonCopy(converted)
			require.Empty(t, versionFor(t, crds, to).admit(admitted, nil).ToAggregate(), "the converted object must be valid at %s", other)

			back := &unstructured.Unstructured{Object: jsonCopy(converted)}
			require.NoError(t, conversion.Convert(back, from.APIVersion()))
			assert.Equal(t, obj, jsonCopy(back.Object))
		})
	}
}

// strictDecode decodes o into the Go type of its kind, refusing unknown fields.
func strictDecode(t *testing.T, s *runtime.Scheme, k fixtures.Kind, o map[string]interface{}) {
	t.Helper()
	typed, err := s.New(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	require.NoError(t, err)
	b, err := json.Marshal(o)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(typed), "every converted field exists in %s %s", k.APIVersion(), k.Kind)
}
