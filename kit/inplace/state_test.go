package inplace

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// The two apps.kruise.io/inplace-update-state values of the OpenKruise v1.1
// release notes (shared/seeds/001, 002), comments removed.
const (
	seedFirstBatch = `{
"revision": "{CLONESET_NAME}-{HASH}",
"updateTimestamp": "2022-03-22T09:06:55Z",
"nextContainerImages": {"main": "main-image:v2"},
"preCheckBeforeNext": {"containersRequiredReady": ["sidecar"]},
"containerBatchesRecord":[
{"timestamp":"2022-03-22T09:06:55Z","containers":["sidecar"]}
]
}`
	seedFinal = `{
"revision": "{CLONESET_NAME}-{HASH}",
"updateTimestamp": "2022-03-22T09:06:55Z",
"lastContainerStatuses":{"main":{"imageID":"THE IMAGE ID OF OLD MAIN CONTAINER"}},
"containerBatchesRecord":[
{"timestamp":"2022-03-22T09:06:55Z","containers":["sidecar"]},
{"timestamp":"2022-03-22T09:07:20Z","containers":["main"]}
]
}`
	seedRevision = "{CLONESET_NAME}-{HASH}"
)

// seedTemplate is the CloneSet template of the seed: a sidecar with
// priority 10 reading annotation app-config, and main without a priority.
func seedTemplate(config, mainImage string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"app-config": config}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "sidecar:v1", Env: []corev1.EnvVar{
				{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"},
				{Name: "APP_CONFIG", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['app-config']"}}},
			}},
			{Name: "main", Image: mainImage},
		}},
	}
}

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// withExtras is the seed document plus the fields newer OpenKruise versions
// (and Flotilla) also write.
func withExtras(m map[string]any, extras map[string]any) map[string]any {
	for k, v := range extras {
		m[k] = v
	}
	return m
}

func TestStateMatchesSeed(t *testing.T) {
	spec, ok := Diff(data(t, seedTemplate("... config v1 ...", "main-image:v1")), data(t, seedTemplate("... config v2 ...", "main-image:v2")))
	require.True(t, ok)
	require.Equal(t, Spec{
		ContainerImages:      map[string]string{"main": "main-image:v2"},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Annotations: map[string]string{"app-config": "... config v2 ..."}}},
	}, spec)

	pod := podFrom(seedTemplate("... config v1 ...", "main-image:v1"))
	setStatus(pod, "main", "main-image:v1", "THE IMAGE ID OF OLD MAIN CONTAINER", true)

	// First batch: the sidecar (priority 10) restarts for its env, main (0) waits.
	state, batch := Start(pod, seedRevision, spec, t0)
	got, err := EncodeState(&state)
	require.NoError(t, err)
	assert.Equal(t,
		`{"revision":"{CLONESET_NAME}-{HASH}","updateTimestamp":"2022-03-22T09:06:55Z","lastContainerStatuses":null,`+
			`"updateEnvFromMetadata":true,"updateImages":true,"nextContainerImages":{"main":"main-image:v2"},`+
			`"preCheckBeforeNext":{"containersRequiredReady":["sidecar"]},`+
			`"containerBatchesRecord":[{"timestamp":"2022-03-22T09:06:55Z","containers":["sidecar"]}]}`, got)
	assert.Equal(t, withExtras(jsonMap(t, seedFirstBatch), map[string]any{
		"lastContainerStatuses": nil, "updateEnvFromMetadata": true, "updateImages": true,
	}), jsonMap(t, got), "field names and values of the seed")
	assert.Equal(t, Spec{ContainerRefMetadata: spec.ContainerRefMetadata}, batch)

	updated, err := ApplyToPod(pod, batch, &state)
	require.NoError(t, err)
	assert.Equal(t, "... config v2 ...", updated.Annotations["app-config"])
	assert.Equal(t, "main-image:v1", container(updated, "main").Image)
	assert.Equal(t, got, updated.Annotations[pub.InPlaceUpdateStateKey])

	// The sidecar is not Ready yet: main waits.
	setStatus(updated, "sidecar", "sidecar:v1", "id-sidecar:v1", false)
	_, _, ok = NextBatch(updated, &state, t0.Add(10*time.Second))
	assert.False(t, ok)
	assert.False(t, UpdateCompleted(updated, &state))

	// Sidecar restarted and Ready: main's image changes, 25s after the start.
	setStatus(updated, "sidecar", "sidecar:v1", "id-sidecar:v1", true)
	next, batch2, ok := NextBatch(updated, &state, t0.Add(25*time.Second))
	require.True(t, ok)
	assert.Equal(t, Spec{ContainerImages: map[string]string{"main": "main-image:v2"}}, batch2)
	got2, err := EncodeState(&next)
	require.NoError(t, err)
	assert.Equal(t,
		`{"revision":"{CLONESET_NAME}-{HASH}","updateTimestamp":"2022-03-22T09:06:55Z",`+
			`"lastContainerStatuses":{"main":{"imageID":"THE IMAGE ID OF OLD MAIN CONTAINER"}},`+
			`"updateEnvFromMetadata":true,"updateImages":true,`+
			`"containerBatchesRecord":[{"timestamp":"2022-03-22T09:06:55Z","containers":["sidecar"]},`+
			`{"timestamp":"2022-03-22T09:07:20Z","containers":["main"]}]}`, got2)
	assert.Equal(t, withExtras(jsonMap(t, seedFinal), map[string]any{
		"updateEnvFromMetadata": true, "updateImages": true,
	}), jsonMap(t, got2))

	final, err := ApplyToPod(updated, batch2, &next)
	require.NoError(t, err)
	assert.Equal(t, "main-image:v2", container(final, "main").Image)
	assert.False(t, UpdateCompleted(final, &next), "main still reports the old image")
	_, _, ok = NextBatch(final, &next, t0.Add(30*time.Second))
	assert.False(t, ok, "nothing left")
	setStatus(final, "main", "main-image:v2", "id-main-v2", true)
	assert.False(t, UpdateCompleted(final, &next), "no node agent has reported the sidecar's restart with the new env")
	reportRestarted(t, final)
	assert.True(t, UpdateCompleted(final, &next))

	// What was written decodes to what was built.
	decoded, err := DecodeState(final)
	require.NoError(t, err)
	reencoded, err := EncodeState(decoded)
	require.NoError(t, err)
	assert.Equal(t, got2, reencoded)
	assert.True(t, decoded.UpdateTimestamp.Equal(&next.UpdateTimestamp))
}

func TestSeedDecodesIntoState(t *testing.T) {
	for _, seed := range []string{seedFirstBatch, seedFinal} {
		var s pub.InPlaceUpdateState
		require.NoError(t, json.Unmarshal([]byte(seed), &s))
		out, err := EncodeState(&s)
		require.NoError(t, err)
		// every field of the seed survives a round trip through the type
		got := jsonMap(t, out)
		for k, v := range jsonMap(t, seed) {
			assert.Equal(t, v, got[k], k)
		}
	}
}

func TestStartRecordsStatusesAndBatches(t *testing.T) {
	// three priorities, three images: three batches
	pod := simplePod([2]string{"a", "1"}, [2]string{"b", "3"}, [2]string{"c", "2"})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "a", Image: "a:v1", ImageID: "ida1", Ready: true},
		{Name: "b", Image: "b:v1", ImageID: "idb1", Ready: true},
		// c has no status yet
	}
	before := pod.DeepCopy()
	spec := images("a", "b", "c")
	spec.Metadata = MetadataChange{Labels: map[string]string{"l": "v"}}
	specBefore := spec.DeepCopy()

	st, batch := Start(pod, "rev-2", spec, t0)
	assert.Equal(t, pub.InPlaceUpdateState{
		Revision:              "rev-2",
		UpdateTimestamp:       metav1.NewTime(t0),
		UpdateImages:          true,
		LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"b": {ImageID: "idb1"}},
		NextContainerImages:   map[string]string{"a": "a:v2", "c": "c:v2"},
		PreCheckBeforeNext:    &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: []string{"b"}},
		ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{
			{Timestamp: metav1.NewTime(t0), Containers: []string{"b"}},
		},
	}, st)
	assert.Equal(t, Spec{ContainerImages: map[string]string{"b": "b:v2"}, Metadata: spec.Metadata}, batch)
	assert.Equal(t, before, pod, "pod modified")
	assert.Equal(t, specBefore, spec, "spec modified")

	p1, err := ApplyToPod(pod, batch, &st)
	require.NoError(t, err)
	setStatus(p1, "b", "b:v2", "idb2", true)
	stBefore := st.DeepCopy()

	st2, batch2, ok := NextBatch(p1, &st, t0.Add(time.Second))
	require.True(t, ok)
	assert.Equal(t, stBefore, &st, "state modified")
	assert.Equal(t, Spec{ContainerImages: map[string]string{"c": "c:v2"}}, batch2, "no pod-wide metadata after the first batch")
	assert.Equal(t, map[string]pub.InPlaceUpdateContainerStatus{"b": {ImageID: "idb1"}, "c": {}}, st2.LastContainerStatuses,
		"c has no status: recorded with an empty imageID")
	assert.Equal(t, map[string]string{"a": "a:v2"}, st2.NextContainerImages)
	assert.Equal(t, []string{"c"}, st2.PreCheckBeforeNext.ContainersRequiredReady)
	assert.Len(t, st2.ContainerBatchesRecord, 2)

	p2, err := ApplyToPod(p1, batch2, &st2)
	require.NoError(t, err)
	_, _, ok = NextBatch(p2, &st2, t0.Add(2*time.Second))
	assert.False(t, ok, "c reports no status yet")
	p2.Status.ContainerStatuses = append(p2.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c", Image: "c:v2", ImageID: "idc2"})
	_, _, ok = NextBatch(p2, &st2, t0.Add(2*time.Second))
	assert.False(t, ok, "c runs the new image but is not Ready")
	p2.Status.ContainerStatuses[2].Ready = true

	st3, batch3, ok := NextBatch(p2, &st2, t0.Add(3*time.Second))
	require.True(t, ok)
	assert.Equal(t, Spec{ContainerImages: map[string]string{"a": "a:v2"}}, batch3)
	assert.Nil(t, st3.NextContainerImages)
	assert.Nil(t, st3.PreCheckBeforeNext)
	assert.Equal(t, []pub.InPlaceUpdateContainerBatch{
		{Timestamp: metav1.NewTime(t0), Containers: []string{"b"}},
		{Timestamp: metav1.NewTime(t0.Add(time.Second)), Containers: []string{"c"}},
		{Timestamp: metav1.NewTime(t0.Add(3 * time.Second)), Containers: []string{"a"}},
	}, st3.ContainerBatchesRecord)
	assert.False(t, Pending(&st3))
}

func TestNextBatchWaits(t *testing.T) {
	pod := simplePod([2]string{"a", "2"}, [2]string{"b", "1"})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "a", Image: "a:v1", ImageID: "ida1", Ready: true},
		{Name: "b", Image: "b:v1", ImageID: "idb1", Ready: true},
	}
	st, batch := Start(pod, "rev-2", images("a", "b"), t0)
	updated, err := ApplyToPod(pod, batch, &st)
	require.NoError(t, err)

	ready := func() *corev1.Pod {
		p := updated.DeepCopy()
		setStatus(p, "a", "a:v2", "ida2", true)
		return p
	}
	tests := []struct {
		name  string
		pod   func() *corev1.Pod
		state func() *pub.InPlaceUpdateState
		ok    bool
	}{
		{"a updated and Ready", ready, func() *pub.InPlaceUpdateState { return &st }, true},
		{"a still runs the old image", func() *corev1.Pod { return updated }, func() *pub.InPlaceUpdateState { return &st }, false},
		{"a updated but not Ready", func() *corev1.Pod {
			p := ready()
			p.Status.ContainerStatuses[0].Ready = false
			return p
		}, func() *pub.InPlaceUpdateState { return &st }, false},
		{"a lost its status", func() *corev1.Pod {
			p := ready()
			p.Status.ContainerStatuses = p.Status.ContainerStatuses[1:]
			return p
		}, func() *pub.InPlaceUpdateState { return &st }, false},
		{"in grace period", func() *corev1.Pod {
			p := ready()
			p.Annotations[pub.InPlaceUpdateGraceKey] = "{}"
			return p
		}, func() *pub.InPlaceUpdateState { return &st }, false},
		{"nothing pending", ready, func() *pub.InPlaceUpdateState {
			s := st.DeepCopy()
			s.NextContainerImages = nil
			return s
		}, false},
		{"no state", ready, func() *pub.InPlaceUpdateState { return nil }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ok := NextBatch(tt.pod(), tt.state(), t0.Add(time.Minute))
			assert.Equal(t, tt.ok, ok)
		})
	}
}

func TestApplyToPod(t *testing.T) {
	pod := podFrom(template())
	pod.Annotations[pub.InPlaceUpdateStateKeyOld] = "{}"
	pod.Annotations[pub.InPlaceUpdateGraceKey] = "{}"
	before := pod.DeepCopy()
	batch := Spec{
		ContainerImages: map[string]string{"main": "web:v2", "ghost": "x"},
		Metadata: MetadataChange{
			Labels: map[string]string{"tier": "front", "new": "1"}, RemovedLabels: []string{"app"},
			Annotations: map[string]string{"owner": "b"}, RemovedAnnotations: []string{"prometheus.io/scrape"},
		},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{
			"sidecar": {Annotations: map[string]string{"app-config": "v2"}},
			"logs":    {Labels: map[string]string{"track": "canary"}},
		},
	}
	state := NewState("rev-2", batch, t0)

	got, err := ApplyToPod(pod, batch, &state)
	require.NoError(t, err)
	assert.Equal(t, before, pod, "pod modified")
	assert.Equal(t, "web:v2", container(got, "main").Image)
	assert.Equal(t, "registry.example.com/shop/config:v1", container(got, "sidecar").Image)
	assert.Equal(t, map[string]string{"tier": "front", "new": "1", "track": "canary"}, got.Labels)
	enc, _ := EncodeState(&state)
	assert.Equal(t, map[string]string{
		"app-config": "v2", "owner": "b", pub.InPlaceUpdateStateKey: enc,
	}, got.Annotations)

	// a pod without labels or annotations
	bare := simplePod([2]string{"a", ""})
	got, err = ApplyToPod(bare, Spec{Metadata: MetadataChange{Labels: map[string]string{"x": "y"}}}, &state)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x": "y"}, got.Labels)
	assert.Nil(t, bare.Labels)
}

func TestNewState(t *testing.T) {
	st := NewState("rev", Spec{ContainerRefMetadata: map[string]metav1.ObjectMeta{"a": {}}}, t0.Add(300*time.Millisecond))
	assert.Equal(t, pub.InPlaceUpdateState{
		Revision: "rev", UpdateTimestamp: metav1.NewTime(t0), UpdateEnvFromMetadata: true,
	}, st, "timestamp kept at the annotation's precision")
	assert.True(t, NewState("rev", images("a"), t0).UpdateImages)
	assert.False(t, NewState("rev", Spec{}, t0).UpdateImages)
}

func TestStartMetadataOnly(t *testing.T) {
	pod := simplePod([2]string{"a", "1"}, [2]string{"b", "2"})
	st, batch := Start(pod, "rev", Spec{Metadata: MetadataChange{RemovedLabels: []string{"x"}}}, t0)
	enc, err := EncodeState(&st)
	require.NoError(t, err)
	assert.Equal(t, `{"revision":"rev","updateTimestamp":"2022-03-22T09:06:55Z","lastContainerStatuses":null,`+
		`"containerBatchesRecord":[{"timestamp":"2022-03-22T09:06:55Z","containers":[]}]}`, enc)
	assert.Equal(t, Spec{Metadata: MetadataChange{RemovedLabels: []string{"x"}}}, batch)
	assert.True(t, UpdateCompleted(pod, &st), "no container to wait for")
}

func TestDecodeState(t *testing.T) {
	pod := simplePod([2]string{"a", ""})
	st, err := DecodeState(pod)
	require.NoError(t, err)
	assert.Nil(t, st)

	pod.Annotations = map[string]string{pub.InPlaceUpdateStateKeyOld: `{"revision":"old"}`}
	st, err = DecodeState(pod)
	require.NoError(t, err)
	assert.Equal(t, "old", st.Revision, "legacy key")

	pod.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"new"}`
	st, err = DecodeState(pod)
	require.NoError(t, err)
	assert.Equal(t, "new", st.Revision, "current key first")

	pod.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":`
	_, err = DecodeState(pod)
	assert.Error(t, err)
}
