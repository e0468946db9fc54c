package containermeta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
)

// appC reads label version; sideC reads nothing.
var (
	appC = corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "VERSION",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}}}
	sideC = corev1.Container{Name: "side"}
)

func hashOf(c *corev1.Container, version string) uint64 {
	return containermeta.CurrentHash(c, map[string]string{"VERSION": version})
}

// testPod: app (containerID cri://<appID>) and side (cri://s1) running, label
// version, InPlaceUpdateReady with status cond ("" for none).
func testPod(version, appID string, cond corev1.ConditionStatus) *corev1.Pod {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"version": version}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{appC, sideC},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "cri://" + appID, State: running},
			{Name: "side", ContainerID: "cri://s1", State: running},
		}},
	}
	if cond != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: cond}}
	}
	return p
}

func set(entries ...pub.RuntimeContainerMeta) *pub.RuntimeContainerMetaSet {
	return &pub.RuntimeContainerMetaSet{Containers: entries}
}

func entry(name, id string, hash uint64) pub.RuntimeContainerMeta {
	return pub.RuntimeContainerMeta{Name: name, ContainerID: "cri://" + id, Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: hash}}
}

func TestInScope(t *testing.T) {
	assert.True(t, inScope(testPod("v1", "a1", "")))
	noGate := testPod("v1", "a1", "")
	noGate.Spec.ReadinessGates = nil
	assert.False(t, inScope(noGate), "no workload updates it in place")
	noRefs := testPod("v1", "a1", "")
	noRefs.Spec.Containers = []corev1.Container{sideC}
	assert.False(t, inScope(noRefs), "no env reads metadata")
	onFailure := testPod("v1", "a1", "")
	onFailure.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	assert.False(t, inScope(onFailure), "a stopped container would not come back")
	deleting := testPod("v1", "a1", "")
	deleting.DeletionTimestamp = &metav1.Time{}
	assert.False(t, inScope(deleting))
}

func TestBuildSet(t *testing.T) {
	obs := map[string]observed{"app": {EnvHash: 11, PlainHash: 5}, "side": {EnvHash: 22}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		old  *pub.RuntimeContainerMetaSet
		todo []string
		want *pub.RuntimeContainerMetaSet
	}{
		{"first sight: both from the runtime", testPod("v1", "a1", ""), nil, []string{"app", "side"},
			set(pub.RuntimeContainerMeta{Name: "app", ContainerID: "cri://a1", Hashes: pub.RuntimeContainerHashes{PlainHash: 5, ExtractedEnvFromMetadataHash: 11}}, entry("side", "s1", 22))},
		{"recorded entries are kept as written (read once per container)", testPod("v2", "a1", ""), set(entry("app", "a1", 99), entry("side", "s1", 98)), nil,
			set(entry("app", "a1", 99), entry("side", "s1", 98))},
		{"new container: new entry, the other kept", testPod("v2", "a2", ""), set(entry("app", "a1", 99), entry("side", "s1", 98)), []string{"app"},
			set(pub.RuntimeContainerMeta{Name: "app", ContainerID: "cri://a2", Hashes: pub.RuntimeContainerHashes{PlainHash: 5, ExtractedEnvFromMetadataHash: 11}}, entry("side", "s1", 98))},
		{"entry without a hash is read again", testPod("v1", "a1", ""), set(entry("app", "a1", 0), entry("side", "s1", 98)), []string{"app"},
			set(pub.RuntimeContainerMeta{Name: "app", ContainerID: "cri://a1", Hashes: pub.RuntimeContainerHashes{PlainHash: 5, ExtractedEnvFromMetadataHash: 11}}, entry("side", "s1", 98))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var todo []string
			for _, cs := range newEntries(tc.pod, tc.old) {
				todo = append(todo, cs.Name)
			}
			assert.Equal(t, tc.todo, todo)
			assert.Equal(t, tc.want, buildSet(tc.pod, tc.old, obs))
		})
	}
	noID := testPod("v1", "a1", "")
	noID.Status.ContainerStatuses[0].ContainerID = ""
	assert.Equal(t, set(entry("side", "s1", 22)), buildSet(noID, nil, obs), "a container not created yet has no entry")
}

func TestRestarts(t *testing.T) {
	v1, v2 := hashOf(&appC, "v1"), hashOf(&appC, "v2")
	side := entry("side", "s1", hashOf(&sideC, ""))
	exited := testPod("v2", "a1", corev1.ConditionFalse)
	exited.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		set  *pub.RuntimeContainerMetaSet
		want []restart
	}{
		{"in-place update, label changed: only the reader restarts", testPod("v2", "a1", corev1.ConditionFalse), set(entry("app", "a1", v1), side), []restart{{"app", "a1", v2}}},
		{"no update in flight (gate True): a label changed by hand restarts nothing", testPod("v2", "a1", corev1.ConditionTrue), set(entry("app", "a1", v1), side), nil},
		{"no condition yet", testPod("v2", "a1", ""), set(entry("app", "a1", v1), side), nil},
		{"restarted with the new value", testPod("v2", "a2", corev1.ConditionFalse), set(entry("app", "a2", v2), side), nil},
		{"new container started with the stale value: again", testPod("v2", "a2", corev1.ConditionFalse), set(entry("app", "a2", v1), side), []restart{{"app", "a2", v2}}},
		{"entry of the old container (status moved on, meta not yet)", testPod("v2", "a2", corev1.ConditionFalse), set(entry("app", "a1", v1), side), nil},
		{"hash not read yet", testPod("v2", "a1", corev1.ConditionFalse), set(entry("app", "a1", 0), side), nil},
		{"container not running (stopped, not yet restarted)", exited, set(entry("app", "a1", v1), side), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, restarts(tc.pod, tc.set)) })
	}
}

func TestRuntimeID(t *testing.T) {
	assert.Equal(t, "abc", runtimeID("containerd://abc"))
	assert.Equal(t, "abc", runtimeID("abc"))
}

func TestSpecEnv(t *testing.T) {
	env, ok := specEnv(map[string]string{"info": `{"pid":1,"runtimeSpec":{"process":{"env":["PATH=/bin","VERSION=v2 "]}}}`})
	assert.True(t, ok)
	assert.Equal(t, map[string]string{"PATH": "/bin", "VERSION": "v2 "}, env)
	for _, info := range []map[string]string{nil, {"info": "{"}, {"info": `{"runtimeSpec":{}}`}} {
		_, ok := specEnv(info)
		assert.False(t, ok, "%v", info)
	}
}
