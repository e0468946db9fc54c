package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
)

func TestUpdateCompleted(t *testing.T) {
	// main was updated from web:v1 (imageID id-1) to web:v2; logs was not touched.
	state := func() *pub.InPlaceUpdateState {
		return &pub.InPlaceUpdateState{
			Revision:              "rev-2",
			LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"main": {ImageID: "id-1"}},
		}
	}
	pod := func(statuses ...corev1.ContainerStatus) *corev1.Pod {
		p := simplePod([2]string{"main", ""}, [2]string{"logs", ""})
		p.Spec.Containers[0].Image = "web:v2"
		p.Status.ContainerStatuses = statuses
		return p
	}
	logs := corev1.ContainerStatus{Name: "logs", Image: "logs:v1", ImageID: "id-logs"}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		state *pub.InPlaceUpdateState
		want  bool
	}{
		{"imageID changed", pod(corev1.ContainerStatus{Name: "main", Image: "web:v2", ImageID: "id-2"}, logs), state(), true},
		{"imageID changed, status image spelled differently", pod(corev1.ContainerStatus{Name: "main", Image: "docker.io/library/web:v2", ImageID: "id-2"}, logs), state(), true},
		{"imageID unchanged, old image", pod(corev1.ContainerStatus{Name: "main", Image: "web:v1", ImageID: "id-1"}, logs), state(), false},
		{"imageID unchanged but new image running (same digest, new tag)", pod(corev1.ContainerStatus{Name: "main", Image: "web:v2", ImageID: "id-1"}, logs), state(), true},
		{"imageID unchanged, normalised new image running", pod(corev1.ContainerStatus{Name: "main", Image: "docker.io/library/web:v2", ImageID: "id-1"}, logs), state(), true},
		{"missing status", pod(logs), state(), false},
		{"no statuses at all", pod(), state(), false},
		{"no imageID recorded, still none, old image", pod(corev1.ContainerStatus{Name: "main", Image: "web:v1"}, logs), func() *pub.InPlaceUpdateState {
			s := state()
			s.LastContainerStatuses["main"] = pub.InPlaceUpdateContainerStatus{}
			return s
		}(), false},
		{"no imageID recorded, new image reported", pod(corev1.ContainerStatus{Name: "main", Image: "web:v2"}, logs), func() *pub.InPlaceUpdateState {
			s := state()
			s.LastContainerStatuses["main"] = pub.InPlaceUpdateContainerStatus{}
			return s
		}(), true},
		{"next batch pending", pod(corev1.ContainerStatus{Name: "main", Image: "web:v2", ImageID: "id-2"}, logs), func() *pub.InPlaceUpdateState {
			s := state()
			s.NextContainerImages = map[string]string{"logs": "logs:v2"}
			return s
		}(), false},
		{"in grace period", func() *corev1.Pod {
			p := pod(corev1.ContainerStatus{Name: "main", Image: "web:v2", ImageID: "id-2"}, logs)
			p.Annotations = map[string]string{pub.InPlaceUpdateGraceKey: "{}"}
			return p
		}(), state(), false},
		{"no state: nothing in flight", pod(), nil, true},
		{"metadata-only update: nothing recorded", pod(), &pub.InPlaceUpdateState{Revision: "rev-2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *pub.InPlaceUpdateState
			if tt.state != nil {
				before = tt.state.DeepCopy()
			}
			assert.Equal(t, tt.want, UpdateCompleted(tt.pod, tt.state))
			assert.Equal(t, before, tt.state, "state modified")
		})
	}
}

func TestNormalizeImage(t *testing.T) {
	tests := map[string]string{
		"nginx":                          "docker.io/library/nginx:latest",
		"nginx:1.25":                     "docker.io/library/nginx:1.25",
		"library/nginx:1.25":             "docker.io/library/nginx:1.25",
		"docker.io/nginx":                "docker.io/library/nginx:latest",
		"index.docker.io/library/nginx":  "docker.io/library/nginx:latest",
		"fluent/fluent-bit:3.0":          "docker.io/fluent/fluent-bit:3.0",
		"registry.example.com/a/b":       "registry.example.com/a/b:latest",
		"registry.example.com:5000/a":    "registry.example.com:5000/a:latest",
		"registry.example.com:5000/a:v1": "registry.example.com:5000/a:v1",
		"localhost/a":                    "localhost/a:latest",
		"nginx@sha256:abc":               "docker.io/library/nginx@sha256:abc",
		"nginx:1.25@sha256:abc":          "docker.io/library/nginx:1.25@sha256:abc",
	}
	for in, want := range tests {
		assert.Equal(t, want, normalizeImage(in), in)
	}
	assert.False(t, sameImage("", ""), "empty images never match")
	assert.False(t, sameImage("nginx:1.25", "nginx:1.26"))
}

// TestMarkReady: when Refresh sets InPlaceUpdateReady True. The rows
// without a state are the gate an update turned False whose pod write never
// landed (issue 26 item 4): a crash or lost Lease between the two writes, or
// a rejected write, leaves no state annotation behind.
func TestMarkReady(t *testing.T) {
	completed := func() *pub.InPlaceUpdateState {
		return &pub.InPlaceUpdateState{Revision: "rev-2", LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"main": {ImageID: "id-1"}}}
	}
	pending := func() *pub.InPlaceUpdateState {
		s := completed()
		s.NextContainerImages = map[string]string{"logs": "logs:v2"}
		return s
	}
	running := func() *pub.InPlaceUpdateState {
		s := completed()
		s.LastContainerStatuses["main"] = pub.InPlaceUpdateContainerStatus{ImageID: "id-0"} // the kubelet still reports id-0
		return s
	}
	specV2 := func(p *corev1.Pod) { p.Spec.Containers[0].Image = "main:v2" }
	pod := func(gate bool, cond corev1.ConditionStatus, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := simplePod([2]string{"main", ""}, [2]string{"logs", ""})
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "main", Image: "main:v1", ImageID: "id-0"}, {Name: "logs", Image: "logs:v1", ImageID: "id-logs"},
		}
		if gate {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		}
		if cond != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: cond, Reason: ReasonStartInPlaceUpdate}}
		}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	inGrace := func(p *corev1.Pod) { p.Annotations = map[string]string{pub.InPlaceUpdateGraceKey: "{}"} }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		state *pub.InPlaceUpdateState
		want  bool
	}{
		{"no state, False: the pod write never landed", pod(true, corev1.ConditionFalse), nil, true},
		{"no state, Unknown: not ours to leave so", pod(true, corev1.ConditionUnknown), nil, true},
		{"no state, True: nothing to do", pod(true, corev1.ConditionTrue), nil, false},
		{"no state, no condition: the first gate write's job", pod(true, ""), nil, false},
		{"no gate", pod(false, corev1.ConditionFalse), nil, false},
		{"no state but a grace period parked", pod(true, corev1.ConditionFalse, inGrace), nil, false},
		{"update completed", pod(true, corev1.ConditionFalse), completed(), true},
		{"update completed, already True", pod(true, corev1.ConditionTrue), completed(), true},
		{"stale state of an earlier update, False: the new write never landed", pod(true, corev1.ConditionFalse), completed(), true},
		{"containers still restarting", pod(true, corev1.ConditionFalse, specV2), running(), false},
		{"next batch pending", pod(true, corev1.ConditionFalse), pending(), false},
		{"grace period running", pod(true, corev1.ConditionFalse, inGrace), completed(), false},
		{"completed, no gate", pod(false, corev1.ConditionFalse), completed(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			assert.Equal(t, tt.want, MarkReady(tt.pod, tt.state))
			assert.Equal(t, before, tt.pod, "pod modified")
		})
	}
}

// TestUpdateCompletedEnvFromMetadata: an update of env from metadata is
// complete only once the node agent's runtime-containers-meta shows every
// container under its current containerID with the hash the pod's labels
// resolve to now, and the restarted container is Ready.
func TestUpdateCompletedEnvFromMetadata(t *testing.T) {
	app := corev1.Container{Name: "app", Image: "app:v1", Env: []corev1.EnvVar{{Name: "VERSION",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}}}
	side := corev1.Container{Name: "side", Image: "side:v1"}
	hash := func(c *corev1.Container, v string) uint64 {
		return containermeta.CurrentHash(c, map[string]string{"VERSION": v})
	}
	meta := func(appID, appVersion string) string {
		v, err := containermeta.Encode(&pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
			{Name: "app", ContainerID: appID, Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: hash(&app, appVersion)}},
			{Name: "side", ContainerID: "cri://s1", Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: hash(&side, "")}},
		}})
		require.NoError(t, err)
		return v
	}
	pod := func(appID string, ready bool, annotation string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"version": "v2"}, Annotations: map[string]string{}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{app, side}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Image: "app:v1", ContainerID: appID, Ready: ready}, {Name: "side", Image: "side:v1", ContainerID: "cri://s1", Ready: true}}},
		}
		if annotation != "" {
			p.Annotations[pub.RuntimeContainerMetaKey] = annotation
		}
		return p
	}
	envState := &pub.InPlaceUpdateState{Revision: "rev-2", UpdateEnvFromMetadata: true}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		state *pub.InPlaceUpdateState
		want  bool
	}{
		{"restarted with the new value and ready", pod("cri://a2", true, meta("cri://a2", "v2")), envState, true},
		{"labels patched, no restart yet", pod("cri://a1", true, meta("cri://a1", "v1")), envState, false},
		{"new container, agent has not recorded it", pod("cri://a2", true, meta("cri://a1", "v1")), envState, false},
		{"new container started with the stale value", pod("cri://a2", true, meta("cri://a2", "v1")), envState, false},
		{"restarted but not ready", pod("cri://a2", false, meta("cri://a2", "v2")), envState, false},
		{"no runtime-containers-meta (no agent)", pod("cri://a1", true, ""), envState, false},
		{"unreadable runtime-containers-meta", pod("cri://a2", true, "{"), envState, false},
		{"state without the flag: meta not consulted", pod("cri://a1", true, ""), &pub.InPlaceUpdateState{Revision: "rev-2"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, UpdateCompleted(tc.pod, tc.state)) })
	}
}
