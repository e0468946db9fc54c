package inplace

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestGraceRoundTrip(t *testing.T) {
	g := GraceSpec{
		Revision:     "shop-7f9c",
		GraceSeconds: 30,
		Spec: Spec{
			ContainerImages: map[string]string{"main": "web:v2"},
			Metadata: MetadataChange{
				Labels: map[string]string{"tier": "front"}, RemovedLabels: []string{"old"},
				Annotations: map[string]string{"owner": "b"}, RemovedAnnotations: []string{"a", "z"},
			},
			ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Annotations: map[string]string{"app-config": "v2"}}},
		},
	}
	before := GraceSpec{Revision: g.Revision, GraceSeconds: g.GraceSeconds, Spec: g.Spec.DeepCopy()}
	v, err := EncodeGrace(g)
	require.NoError(t, err)
	assert.Equal(t, before, g, "input modified")

	patch := `{"metadata":{"annotations":{"a":null,"owner":"b","z":null},"labels":{"old":null,"tier":"front"}}}`
	assert.Equal(t, `{"revision":"shop-7f9c","containerImages":{"main":"web:v2"},`+
		`"containerRefMetadata":{"sidecar":{"annotations":{"app-config":"v2"}}},`+
		`"metaDataPatch":"`+base64.StdEncoding.EncodeToString([]byte(patch))+`",`+
		`"updateEnvFromMetadata":true,"graceSeconds":30}`, v)

	got, err := DecodeGrace(v)
	require.NoError(t, err)
	assert.Equal(t, g, got)
}

func TestGraceMinimal(t *testing.T) {
	v, err := EncodeGrace(GraceSpec{Revision: "r", Spec: images("a"), GraceSeconds: 5})
	require.NoError(t, err)
	assert.Equal(t, `{"revision":"r","containerImages":{"a":"a:v2"},"graceSeconds":5}`, v)
	got, err := DecodeGrace(v)
	require.NoError(t, err)
	assert.Equal(t, GraceSpec{Revision: "r", Spec: images("a"), GraceSeconds: 5}, got)
}

func TestDecodeGraceOpenKruiseShape(t *testing.T) {
	// What OpenKruise writes: a strategic-merge patch produced from two pods'
	// metadata, plus empty maps it allocated.
	patch := base64.StdEncoding.EncodeToString([]byte(`{"metadata":{"labels":{"version":"2"},"annotations":{"gone":null}}}`))
	v := `{"revision":"shop-2","containerImages":{"main":"web:v2"},"containerRefMetadata":{},"metaDataPatch":"` + patch + `","graceSeconds":10}`
	got, err := DecodeGrace(v)
	require.NoError(t, err)
	assert.Equal(t, GraceSpec{
		Revision:     "shop-2",
		GraceSeconds: 10,
		Spec: Spec{
			ContainerImages: map[string]string{"main": "web:v2"},
			Metadata:        MetadataChange{Labels: map[string]string{"version": "2"}, RemovedAnnotations: []string{"gone"}},
		},
	}, got)
}

func TestDecodeGraceErrors(t *testing.T) {
	enc := func(patch string) string {
		return `{"revision":"r","metaDataPatch":"` + base64.StdEncoding.EncodeToString([]byte(patch)) + `"}`
	}
	for name, v := range map[string]string{
		"not JSON":               `{"revision":`,
		"patch not JSON":         enc(`{`),
		"whole map deleted":      enc(`{"metadata":{"labels":null}}`),
		"other metadata field":   enc(`{"metadata":{"finalizers":["x"]}}`),
		"outside metadata":       enc(`{"spec":{}}`),
		"non-string label value": enc(`{"metadata":{"labels":{"a":1}}}`),
	} {
		_, err := DecodeGrace(v)
		assert.Error(t, err, name)
	}
}

func TestGraceRemaining(t *testing.T) {
	state := &pub.InPlaceUpdateState{UpdateTimestamp: metav1.NewTime(t0)}
	tests := []struct {
		name  string
		state *pub.InPlaceUpdateState
		grace int32
		now   time.Time
		want  time.Duration
	}{
		{"just started", state, 30, t0, 30 * time.Second},
		{"whole seconds in", state, 30, t0.Add(10 * time.Second), 20 * time.Second},
		{"rounded up", state, 30, t0.Add(10*time.Second + 500*time.Millisecond), 20 * time.Second},
		{"a hair before the end", state, 30, t0.Add(30*time.Second - time.Nanosecond), time.Second},
		{"at the end", state, 30, t0.Add(30 * time.Second), 0},
		{"after the end", state, 30, t0.Add(time.Hour), 0},
		{"clock behind the timestamp", state, 30, t0.Add(-5 * time.Second), 35 * time.Second},
		{"no grace period", state, 0, t0, 0},
		{"negative grace period", state, -1, t0, 0},
		{"no state", nil, 30, t0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, GraceRemaining(tt.state, tt.grace, tt.now))
		})
	}
}
