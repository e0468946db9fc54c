package inplace

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		change func(*corev1.PodTemplateSpec)
		want   Spec
		ok     bool
	}{
		{
			name:   "identical revisions: nothing to do, in place",
			change: func(*corev1.PodTemplateSpec) {},
			ok:     true,
		},
		{
			name:   "image only",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "registry.example.com/shop/web:v2" },
			want:   Spec{ContainerImages: map[string]string{"main": "registry.example.com/shop/web:v2"}},
			ok:     true,
		},
		{
			name: "two images",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[0].Image = "web:v2"
				t.Spec.Containers[2].Image = "fluent/fluent-bit:3.1"
			},
			want: Spec{ContainerImages: map[string]string{"main": "web:v2", "logs": "fluent/fluent-bit:3.1"}},
			ok:   true,
		},
		{
			name: "metadata only: label added, annotation replaced",
			change: func(t *corev1.PodTemplateSpec) {
				t.Labels["version"] = "2"
				t.Annotations["owner"] = "team-b"
			},
			want: Spec{Metadata: MetadataChange{
				Labels:      map[string]string{"version": "2"},
				Annotations: map[string]string{"owner": "team-b"},
			}},
			ok: true,
		},
		{
			name: "image and metadata",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[0].Image = "web:v2"
				t.Labels["tier"] = "front"
			},
			want: Spec{
				ContainerImages: map[string]string{"main": "web:v2"},
				Metadata:        MetadataChange{Labels: map[string]string{"tier": "front"}},
			},
			ok: true,
		},
		{
			name: "annotations removed",
			change: func(t *corev1.PodTemplateSpec) {
				delete(t.Annotations, "owner")
				delete(t.Annotations, "prometheus.io/scrape")
			},
			want: Spec{Metadata: MetadataChange{RemovedAnnotations: []string{"owner", "prometheus.io/scrape"}}},
			ok:   true,
		},
		{
			name: "all labels removed",
			change: func(t *corev1.PodTemplateSpec) {
				t.Labels = nil
			},
			want: Spec{Metadata: MetadataChange{RemovedLabels: []string{"app", "tier", "track"}}},
			ok:   true,
		},
		{
			name: "env from metadata: changed annotation read by the sidecar",
			change: func(t *corev1.PodTemplateSpec) {
				t.Annotations["app-config"] = "v2"
				t.Annotations["owner"] = "team-b"
			},
			want: Spec{
				Metadata:             MetadataChange{Annotations: map[string]string{"owner": "team-b"}},
				ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Annotations: map[string]string{"app-config": "v2"}}},
			},
			ok: true,
		},
		{
			name: "env gaining downward-API references is an env change",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: "T",
					ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['track']"}}})
				t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: "N",
					ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['new']"}}})
			},
		},
		{
			name: "removing an annotation read by env is a pod-wide removal, no restart",
			change: func(t *corev1.PodTemplateSpec) {
				delete(t.Annotations, "app-config")
			},
			want: Spec{Metadata: MetadataChange{RemovedAnnotations: []string{"app-config"}}},
			ok:   true,
		},
		{
			name:   "env change is not in place",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Env[0].Value = "debug" },
		},
		{
			name: "env change next to an image change is not in place",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[0].Image = "web:v2"
				t.Spec.Containers[1].Env = t.Spec.Containers[1].Env[:1]
			},
		},
		{
			name: "container added",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "extra", Image: "extra:v1"})
			},
		},
		{
			name:   "container removed",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers = t.Spec.Containers[:2] },
		},
		{
			name: "containers reordered",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[1], t.Spec.Containers[2] = t.Spec.Containers[2], t.Spec.Containers[1]
			},
		},
		{
			name: "container renamed with a new image",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[2].Name = "logs2"
				t.Spec.Containers[2].Image = "fluent/fluent-bit:3.1"
			},
		},
		{
			name: "resources (vertical scaling) are not in place",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
			},
		},
		{
			name:   "ports",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Ports[0].ContainerPort = 9090 },
		},
		{
			name: "volumes",
			change: func(t *corev1.PodTemplateSpec) {
				t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: "x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			},
		},
		{
			name:   "init container image",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.InitContainers[0].Image = "busybox:1.37" },
		},
		{
			name:   "image removed",
			change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[2].Image = "" },
		},
		{
			name:   "other template metadata",
			change: func(t *corev1.PodTemplateSpec) { t.Finalizers = []string{"example.com/f"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newT := template()
			tt.change(newT)
			got, ok := Diff(data(t, template()), data(t, newT))
			require.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDiffEnvFromMetadataSeveralReaders(t *testing.T) {
	withRefs := func() *corev1.PodTemplateSpec {
		tmpl := template()
		main := &tmpl.Spec.Containers[0]
		main.Env = append(main.Env,
			corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['track']"}}},
			corev1.EnvVar{Name: "T2", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['track']"}}},
			corev1.EnvVar{Name: "N", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['new']"}}},
			// not a subscript: no reference
			corev1.EnvVar{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		)
		return tmpl
	}
	newT := withRefs()
	newT.Labels["track"] = "canary"
	newT.Annotations["new"] = "x"
	newT.Spec.Containers[2].Image = "fluent/fluent-bit:3.1"

	got, ok := Diff(data(t, withRefs()), data(t, newT))
	require.True(t, ok)
	assert.Equal(t, Spec{
		ContainerImages: map[string]string{"logs": "fluent/fluent-bit:3.1"},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{
			"main": {Labels: map[string]string{"track": "canary"}, Annotations: map[string]string{"new": "x"}},
			"logs": {Labels: map[string]string{"track": "canary"}},
		},
	}, got)
	assert.True(t, got.UpdateEnvFromMetadata())
}

func TestParseMetaFieldPath(t *testing.T) {
	tests := []struct {
		path string
		want metaRef
		ok   bool
	}{
		{"metadata.labels['app']", metaRef{"labels", "app"}, true},
		{"metadata.annotations['example.com/x']", metaRef{"annotations", "example.com/x"}, true},
		{"metadata.labels", metaRef{}, false},
		{"metadata.labels['']", metaRef{}, false},
		{"metadata.labels['app'", metaRef{}, false},
		{`metadata.labels["app"]`, metaRef{}, false},
		{"metadata.name", metaRef{}, false},
		{"spec.nodeName", metaRef{}, false},
	}
	for _, tt := range tests {
		got, ok := parseMetaFieldPath(tt.path)
		assert.Equal(t, tt.ok, ok, tt.path)
		assert.Equal(t, tt.want, got, tt.path)
	}
}

func TestDiffRawDocuments(t *testing.T) {
	base := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`
	tests := []struct {
		name     string
		old, new string
		want     Spec
		ok       bool
	}{
		{"key order and whitespace do not matter", base,
			`{ "spec" : { "template" : { "spec":{"containers":[{"image":"i:1","name":"c"}]}, "metadata":{"labels":{"a":"1"}}, "$patch":"replace" } } }`,
			Spec{}, true},
		// OpenKruise v1.9 (pkg/controller/cloneset/revision getPatch, Kubernetes
		// 1.32 types) writes the zero creationTimestamp as null; Flotilla's
		// older revisions omit it. Same template: nothing to change.
		{"creationTimestamp null vs absent", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, true},
		{"creationTimestamp null and an image change", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:2"}]}}}}`,
			Spec{ContainerImages: map[string]string{"c": "i:2"}}, true},
		{"a creationTimestamp that is set is a metadata change", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":"2024-01-01T00:00:00Z","labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, false},
		{"image change", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:2"}]}}}}`,
			Spec{ContainerImages: map[string]string{"c": "i:2"}}, true},
		{"difference outside the template", base,
			`{"spec":{"replicas":3,"template":{"$patch":"replace","metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, false},
		{"difference at the root", base,
			`{"kind":"X","spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, false},
		{"$patch directive dropped", base,
			`{"spec":{"template":{"metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, false},
		{"non-string label", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":1}},"spec":{"containers":[{"name":"c","image":"i:1"}]}}}}`,
			Spec{}, false},
		{"image is not a string", base,
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":2}]}}}}`,
			Spec{}, false},
		{"no template", base, `{"spec":{}}`, Spec{}, false},
		{"not JSON", base, `{"spec":`, Spec{}, false},
		{"not an object", base, `[]`, Spec{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Diff([]byte(tt.old), []byte(tt.new))
			require.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
			// symmetric for the rejections
			if !tt.ok {
				_, ok := Diff([]byte(tt.new), []byte(tt.old))
				assert.False(t, ok)
			}
		})
	}
}

func TestDiffDoesNotModifyInput(t *testing.T) {
	newT := template()
	newT.Spec.Containers[0].Image = "web:v2"
	newT.Annotations["app-config"] = "v2"
	oldB, newB := data(t, template()), data(t, newT)
	oldC, newC := bytes.Clone(oldB), bytes.Clone(newB)
	_, ok := Diff(oldB, newB)
	require.True(t, ok)
	assert.Equal(t, oldC, oldB)
	assert.Equal(t, newC, newB)
}

func TestRefusal(t *testing.T) {
	env := Spec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"main": {Labels: map[string]string{"tier": "b"}}}}
	for _, tc := range []struct {
		name string
		spec Spec
		ok   bool
		want string
	}{
		{"images", Spec{ContainerImages: map[string]string{"main": "nginx:1.28"}}, true, ""},
		{"labels no env reads", Spec{Metadata: MetadataChange{Labels: map[string]string{"tier": "b"}}}, true, ""},
		{"labels env reads: no node agent to restart the container", env, true, NotInPlaceEnvFromMetadata},
		{"other fields", Spec{}, false, NotInPlaceable},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Refusal(tc.spec, tc.ok)) })
	}
}

// TestRefusalWithAgent: with InPlaceUpdateEnvFromMetadata on (a node agent
// restarts containers), a change env reads is in place; nothing else changes.
func TestRefusalWithAgent(t *testing.T) {
	env := Spec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"main": {Labels: map[string]string{"tier": "b"}}}}
	for _, tc := range []struct {
		name  string
		spec  Spec
		ok    bool
		agent bool
		want  string
	}{
		{"env reads the change, gate on", env, true, true, ""},
		{"env reads the change, gate off", env, true, false, NotInPlaceEnvFromMetadata},
		{"env and image, gate on", Spec{ContainerImages: map[string]string{"main": "b"}, ContainerRefMetadata: env.ContainerRefMetadata}, true, true, ""},
		{"other fields, gate on", env, false, true, NotInPlaceable},
		{"images, gate off", Spec{ContainerImages: map[string]string{"main": "b"}}, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, RefusalWithAgent(tc.spec, tc.ok, tc.agent)) })
	}
}

func TestSpecEmpty(t *testing.T) {
	assert.True(t, Spec{}.Empty())
	assert.False(t, Spec{ContainerImages: map[string]string{"a": "b"}}.Empty())
	assert.False(t, Spec{Metadata: MetadataChange{RemovedAnnotations: []string{"a"}}}.Empty())
	assert.False(t, Spec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"a": {}}}.Empty())
}

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, "", false},
		{"a", "a", true},
		{"a", "b", false},
		{1.0, 1.0, true},
		{1.0, "1", false},
		{true, true, true},
		{true, false, false},
		{[]any{"a", 1.0}, []any{"a", 1.0}, true},
		{[]any{"a"}, []any{"a", "b"}, false},
		{[]any{"a"}, []any{"b"}, false},
		{map[string]any{"a": []any{1.0}}, map[string]any{"a": []any{1.0}}, true},
		{map[string]any{"a": 1.0}, map[string]any{"b": 1.0}, false},
		{map[string]any{"a": 1.0}, map[string]any{"a": 1.0, "b": 1.0}, false},
		// null members mean "unset", as a missing one does (OpenKruise v1.9
		// writes "creationTimestamp":null where newer encoders omit it).
		{map[string]any{"a": nil}, map[string]any{"b": nil}, true},
		{map[string]any{"a": nil}, map[string]any{}, true},
		{map[string]any{"a": nil, "b": "x"}, map[string]any{"b": "x"}, true},
		{map[string]any{"a": nil}, map[string]any{"a": 1.0}, false},
		{map[string]any{"a": nil}, map[string]any{"a": map[string]any{}}, false},
		{[]any{nil}, []any{}, false}, // array elements are not dropped
		{map[string]any{}, []any{}, false},
		{1, 1, false}, // not a JSON-decoded type
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, jsonEqual(tt.a, tt.b), "%#v vs %#v", tt.a, tt.b)
		assert.Equal(t, tt.want, jsonEqual(tt.b, tt.a), "%#v vs %#v", tt.b, tt.a)
	}
}

// TestRefusalForPod: with the gate on, a change env reads is in place only on
// a pod a node agent has recorded; the gate off and other changes are
// decided as by RefusalWithAgent.
func TestRefusalForPod(t *testing.T) {
	env := Spec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"main": {Labels: map[string]string{"tier": "b"}}}}
	images := Spec{ContainerImages: map[string]string{"main": "b"}}
	recorded := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.RuntimeContainerMetaKey: `{"containers":[]}`}}}
	unrecorded := &corev1.Pod{}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		spec Spec
		ok   bool
		gate bool
		want string
	}{
		{"env, gate on, recorded", recorded, env, true, true, ""},
		{"env, gate on, no agent record", unrecorded, env, true, true, NotInPlaceNoAgentRecord},
		{"env, gate off, recorded", recorded, env, true, false, NotInPlaceEnvFromMetadata},
		{"images only, gate on, no agent record", unrecorded, images, true, true, ""},
		{"other fields, recorded", recorded, env, false, true, NotInPlaceable},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, RefusalForPod(tc.pod, tc.spec, tc.ok, tc.gate)) })
	}
}
