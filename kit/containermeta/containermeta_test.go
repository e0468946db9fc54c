package containermeta

import (
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func container(env ...corev1.EnvVar) *corev1.Container {
	return &corev1.Container{Name: "main", Env: env}
}

func TestParseFieldPath(t *testing.T) {
	for _, tc := range []struct {
		path, kind, key string
		ok              bool
	}{
		{"metadata.labels['version']", "labels", "version", true},
		{"metadata.annotations['app.io/config']", "annotations", "app.io/config", true},
		{"metadata.labels", "", "", false},
		{"metadata.labels['']", "", "", false},
		{"metadata.name", "", "", false},
		{"spec.nodeName", "", "", false},
	} {
		kind, key, ok := ParseFieldPath(tc.path)
		assert.Equal(t, []any{tc.kind, tc.key, tc.ok}, []any{kind, key, ok}, tc.path)
	}
}

func TestRefs(t *testing.T) {
	c := container(
		fieldEnv("V", "metadata.labels['version']"),
		corev1.EnvVar{Name: "LIT", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['a']"}}},
		fieldEnv("NAME", "metadata.name"),
		fieldEnv("SIDECARSET_VERSION", "metadata.annotations['version.sidecarset']"),
		fieldEnv("CFG", "metadata.annotations['cfg']"),
		corev1.EnvVar{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	)
	assert.Equal(t, []Ref{{"V", "labels", "version"}, {"CFG", "annotations", "cfg"}}, Refs(c))
	assert.True(t, ReadsMetadata(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, *c}}}))
	assert.False(t, ReadsMetadata(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{fieldEnv("N", "metadata.name")}}}}}))
}

// TestHashKnownValues pins the hash to OpenKruise v1.9's
// (pkg/util/containermeta hashEnvs: FNV-1a 32 of DeepHashObject of the JSON
// of the sorted vars), so a hash written by kruise-daemon and one written by
// probe-agent compare equal. The values are FNV-1a 32 of spew's %#v of the
// JSON bytes shown.
func TestHashKnownValues(t *testing.T) {
	c := container(fieldEnv("B", "metadata.annotations['b']"), fieldEnv("A", "metadata.labels['a']"))
	got := ExpectedHash(c, map[string]string{"a": "1"}, map[string]string{"b": "2"})
	// json: [{"name":"A","value":"1"},{"name":"B","value":"2"}]
	assert.Equal(t, uint64(hashOfJSON(`[{"name":"A","value":"1"},{"name":"B","value":"2"}]`)), got)
	// No reference at all: the JSON of a nil slice, "null".
	assert.Equal(t, uint64(hashOfJSON(`null`)), ExpectedHash(container(), nil, nil))
	// A missing label is an empty value, omitted from the JSON.
	assert.Equal(t, uint64(hashOfJSON(`[{"name":"A"}]`)), ExpectedHash(container(fieldEnv("A", "metadata.labels['a']")), nil, nil))
	assert.Equal(t, uint64(0x44426b5c), ExpectedHash(container(fieldEnv("VERSION", "metadata.labels['version']")), map[string]string{"version": "v1"}, nil),
		"golden value: a change of encoding or printer changes every recorded hash")
}

func TestExpectedAndCurrentAgree(t *testing.T) {
	c := container(fieldEnv("VERSION", "metadata.labels['version']"), fieldEnv("CFG", "metadata.annotations['cfg']"), corev1.EnvVar{Name: "PLAIN", Value: "p"})
	labels, annotations := map[string]string{"version": "v1", "other": "x"}, map[string]string{"cfg": "a b "}
	running := EnvMap([]string{"PATH=/bin", "VERSION=v1", "CFG=a b ", "PLAIN=p"})
	for _, tc := range []struct {
		name string
		env  map[string]string
		same bool
	}{
		{"started with the same values", running, true},
		{"label changed since", EnvMap([]string{"VERSION=v0", "CFG=a b "}), false},
		{"edge spaces matter", EnvMap([]string{"VERSION=v1", "CFG=a b"}), false},
		{"var missing in the container", EnvMap([]string{"CFG=a b "}), false},
	} {
		assert.Equal(t, tc.same, CurrentHash(c, tc.env) == ExpectedHash(c, labels, annotations), tc.name)
	}
	// Labels no env reads do not change the hash.
	assert.Equal(t, ExpectedHash(c, labels, annotations), ExpectedHash(c, map[string]string{"version": "v1"}, annotations))
}

func TestParseEnv(t *testing.T) {
	assert.Equal(t, map[string]string{"A": "1", "B": "x=y", "E": ""},
		ParseEnv([]byte("A=1\n  B=x=y \nnoequals\nE=\n")))
	assert.Equal(t, map[string]string{"A": " 1 "}, EnvMap([]string{"A= 1 ", "junk"}))
}

func TestDecodeEncode(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	got, err := Decode(pod)
	require.NoError(t, err)
	assert.Nil(t, got)

	set := &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{{
		Name: "main", ContainerID: "containerd://abc", RestartCount: 1,
		Hashes: pub.RuntimeContainerHashes{PlainHash: 7, ExtractedEnvFromMetadataHash: 9},
	}, {Name: "side", ContainerID: "containerd://def"}}}
	v, err := Encode(set)
	require.NoError(t, err)
	// OpenKruise's JSON: plainHash always, extractedEnvFromMetadataHash when set.
	assert.Equal(t, `{"containers":[{"name":"main","containerID":"containerd://abc","restartCount":1,`+
		`"hashes":{"plainHash":7,"extractedEnvFromMetadataHash":9}},`+
		`{"name":"side","containerID":"containerd://def","restartCount":0,"hashes":{"plainHash":0}}]}`, v)
	pod.Annotations = map[string]string{pub.RuntimeContainerMetaKey: v}
	got, err = Decode(pod)
	require.NoError(t, err)
	assert.Equal(t, set, got)
	assert.Equal(t, &set.Containers[1], Find(got, "side"))
	assert.Nil(t, Find(got, "nope"))

	pod.Annotations[pub.RuntimeContainerMetaKey] = "{"
	_, err = Decode(pod)
	assert.ErrorContains(t, err, pub.RuntimeContainerMetaKey)
}

func TestConsistent(t *testing.T) {
	main := corev1.Container{Name: "main", Env: []corev1.EnvVar{fieldEnv("VERSION", "metadata.labels['version']")}}
	side := corev1.Container{Name: "side"}
	pod := func(version string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"version": version}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{main, side}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", ContainerID: "containerd://m2"}, {Name: "side", ContainerID: "containerd://s1"}}},
		}
	}
	entry := func(name, id string, c *corev1.Container, version string) pub.RuntimeContainerMeta {
		return pub.RuntimeContainerMeta{Name: name, ContainerID: id,
			Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: CurrentHash(c, map[string]string{"VERSION": version})}}
	}
	newMain, oldMain := entry("main", "containerd://m2", &main, "v2"), entry("main", "containerd://m1", &main, "v1")
	sideE := entry("side", "containerd://s1", &side, "")
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		set  *pub.RuntimeContainerMetaSet
		ok   bool
		why  string
	}{
		{"restarted with the new value", pod("v2"), &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{newMain, sideE}}, true, ""},
		{"no annotation", pod("v2"), nil, false, "not found"},
		{"meta still names the old container", pod("v2"), &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{oldMain, sideE}}, false, "containerd://m1"},
		{"new container started with the old value", pod("v2"), &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
			entry("main", "containerd://m2", &main, "v1"), sideE}}, false, "hash"},
		{"container missing from meta", pod("v2"), &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{newMain}}, false, "side is not in"},
		{"hash not yet read (0)", pod("v2"), &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
			{Name: "main", ContainerID: "containerd://m2"}, sideE}}, false, "hash 0"},
	} {
		ok, why := Consistent(tc.pod, tc.set)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Contains(t, why, tc.why, tc.name)
	}
	noStatus := pod("v2")
	noStatus.Status.ContainerStatuses = noStatus.Status.ContainerStatuses[:1]
	ok, why := Consistent(noStatus, &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{newMain, sideE}})
	assert.False(t, ok)
	assert.Contains(t, why, "side has no status")
}

// hashOfJSON is FNV-1a 32 of what Kubernetes' DeepHashObject prints for a
// byte slice (spew %#v: "([]uint8)[110 117 108 108]" for "null"), written
// out independently of the package's printer.
func hashOfJSON(s string) uint32 {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = strconv.Itoa(int(s[i]))
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte("([]uint8)[" + strings.Join(parts, " ") + "]"))
	return h.Sum32()
}
