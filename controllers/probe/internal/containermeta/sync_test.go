package containermeta

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// fakeContainer is one container of the fake runtime.
type fakeContainer struct {
	running bool
	env     []string
	noInfo  bool // the runtime reports no OCI spec: the worker execs env
}

type fakeRuntime struct {
	containers map[string]*fakeContainer
	stopped    []string
	execs      int
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	c, ok := f.containers[id]
	if !ok {
		return nil, errors.New("no such container")
	}
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if c.running {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, State: state,
		Annotations: map[string]string{kubeletHashAnnotation: "1f"}}}
	if !c.noInfo {
		b, _ := json.Marshal(map[string]any{"runtimeSpec": map[string]any{"process": map[string]any{"env": c.env}}})
		resp.Info = map[string]string{"info": string(b)}
	}
	return resp, nil
}

func (f *fakeRuntime) ExecSync(_ context.Context, id string, _ []string, _ time.Duration) ([]byte, []byte, error) {
	f.execs++
	out := ""
	for _, e := range f.containers[id].env {
		out += e + "\n"
	}
	return []byte(out), nil, nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ int64) error {
	f.stopped = append(f.stopped, id)
	f.containers[id].running = false
	return nil
}

// node is a worker over a fake runtime and a pod store the test plays the
// API server and the kubelet on.
type node struct {
	t      *testing.T
	rt     *fakeRuntime
	pods   *podcontrol.Fake
	podInf cache.SharedIndexInformer
	clock  *clocktesting.FakePassiveClock
	w      *Worker
	pod    *corev1.Pod
}

func newNode(t *testing.T, pod *corev1.Pod, rt *fakeRuntime) *node {
	n := &node{t: t, rt: rt, pods: podcontrol.NewFake(), podInf: informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods().Informer(),
		clock: clocktesting.NewFakePassiveClock(time.Unix(1e9, 0)), pod: pod}
	n.restartAgent()
	return n
}

// restartAgent replaces the worker by a new one: nothing is carried in memory.
func (n *node) restartAgent() {
	n.t.Helper()
	w, err := New(Deps{PodInformer: n.podInf, Pods: n.pods, Runtime: n.rt, Recorder: record.NewFakeRecorder(10),
		Queue: controller.QueueOptions{}, Clock: n.clock})
	require.NoError(n.t, err)
	n.w = w
}

// sync runs the worker's sync once and applies its pod write.
func (n *node) sync() {
	n.t.Helper()
	require.NoError(n.t, n.podInf.GetIndexer().Add(n.pod))
	n.pods.ClearActions()
	require.NoError(n.t, n.w.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}))
	for _, a := range n.pods.Actions() {
		assert.Empty(n.t, a.Subresource, "a metadata patch, not status")
		doc, err := json.Marshal(n.pod)
		require.NoError(n.t, err)
		doc, err = strategicpatch.StrategicMergePatch(doc, a.Patch, corev1.Pod{})
		require.NoError(n.t, err)
		next := &corev1.Pod{}
		require.NoError(n.t, json.Unmarshal(doc, next))
		n.pod = next
	}
}

// settle lets the settle delay pass.
func (n *node) settle() { n.clock.SetTime(n.clock.Now().Add(DefaultSettleDelay)) }

func (n *node) writes() int { return len(n.pods.Actions()) }

// TestSyncEnvUpdate walks one in-place update of env from metadata through
// the worker (an agent restarted before the kubelet reports the restart
// decides the same and never stops a container twice).
func TestSyncEnvUpdate(t *testing.T) {
	rt := &fakeRuntime{containers: map[string]*fakeContainer{
		"a1": {running: true, env: []string{"PATH=/bin", "VERSION=v1"}},
		"s1": {running: true, env: []string{"PATH=/bin"}, noInfo: true},
	}}
	n := newNode(t, testPod("v1", "a1", corev1.ConditionTrue), rt)

	n.sync()
	require.Equal(t, 1, n.writes(), "first sight: the annotation is written")
	got, err := containermeta.Decode(n.pod)
	require.NoError(t, err)
	assert.Equal(t, hashOf(&appC, "v1"), containermeta.Find(got, "app").Hashes.ExtractedEnvFromMetadataHash)
	assert.Equal(t, uint64(0x1f), containermeta.Find(got, "app").Hashes.PlainHash, "the kubelet's hash, from the runtime")
	assert.Equal(t, 1, rt.execs, "side has no OCI spec in its status: env read by exec")
	ok, why := containermeta.Consistent(n.pod, got)
	assert.True(t, ok, why)

	n.sync()
	assert.Equal(t, 0, n.writes(), "nothing changed")
	assert.Equal(t, 1, rt.execs, "what a container was started with is read once")

	// The workload updates in place: gate False, label v2.
	n.pod.Labels["version"] = "v2"
	n.pod.Status.Conditions[0].Status = corev1.ConditionFalse
	n.sync()
	assert.Equal(t, 0, n.writes())
	assert.Empty(t, rt.stopped, "the kubelet is given time to see the new label first")
	n.settle()
	n.sync()
	assert.Equal(t, []string{"a1"}, rt.stopped, "only the container reading the label")

	// Agent restarted before the kubelet reported anything: a1 has exited.
	n.restartAgent()
	n.sync()
	n.settle()
	n.sync()
	assert.Equal(t, []string{"a1"}, rt.stopped, "never stopped twice")

	// The kubelet starts a2 with the new value.
	rt.containers["a2"] = &fakeContainer{running: true, env: []string{"VERSION=v2"}}
	n.pod.Status.ContainerStatuses[0].ContainerID = "cri://a2"
	n.pod.Status.ContainerStatuses[0].RestartCount = 1
	n.sync()
	require.Equal(t, 1, n.writes())
	got, err = containermeta.Decode(n.pod)
	require.NoError(t, err)
	app := containermeta.Find(got, "app")
	assert.Equal(t, "cri://a2", app.ContainerID)
	assert.Equal(t, int32(1), app.RestartCount)
	ok, why = containermeta.Consistent(n.pod, got)
	assert.True(t, ok, why)
	n.sync()
	assert.Equal(t, 0, n.writes())
	assert.Equal(t, []string{"a1"}, rt.stopped, "done: no further stop")
}

// TestSyncStaleStart: the kubelet started the new container before it saw
// the new label (its watch lagged): the worker stops it again.
func TestSyncStaleStart(t *testing.T) {
	rt := &fakeRuntime{containers: map[string]*fakeContainer{
		"a2": {running: true, env: []string{"VERSION=v1"}}, "s1": {running: true},
	}}
	n := newNode(t, testPod("v2", "a2", corev1.ConditionFalse), rt)
	n.sync()
	require.Equal(t, 1, n.writes())
	n.sync()
	n.settle()
	n.sync()
	assert.Equal(t, []string{"a2"}, rt.stopped)
}

// TestSyncUnreadable: a container whose status the runtime cannot give is
// recorded without a hash, restarts nothing, and is read again later.
func TestSyncUnreadable(t *testing.T) {
	rt := &fakeRuntime{containers: map[string]*fakeContainer{"s1": {running: true}}}
	n := newNode(t, testPod("v2", "a1", corev1.ConditionFalse), rt)
	n.sync()
	require.Equal(t, 1, n.writes())
	got, err := containermeta.Decode(n.pod)
	require.NoError(t, err)
	assert.Zero(t, containermeta.Find(got, "app").Hashes.ExtractedEnvFromMetadataHash)
	n.sync()
	assert.Empty(t, rt.stopped)
	rt.containers["a1"] = &fakeContainer{running: true, env: []string{"VERSION=v1"}}
	n.sync()
	require.Equal(t, 1, n.writes(), "read again once the runtime answers")
	n.sync()
	n.settle()
	n.sync()
	assert.Equal(t, []string{"a1"}, rt.stopped)
}

// TestDueForgetsDroppedRestarts: a restart decided and then no longer wanted is forgotten, so a later decision for the
// same container waits the full delay again.
func TestDueForgetsDroppedRestarts(t *testing.T) {
	n := newNode(t, testPod("v2", "a1", corev1.ConditionFalse), &fakeRuntime{})
	r := restart{Name: "app", ID: "a1", Hash: 1}
	ok, wait := n.w.due(r)
	assert.False(t, ok)
	assert.Equal(t, DefaultSettleDelay, wait)
	n.clock.SetTime(n.clock.Now().Add(11 * DefaultSettleDelay))
	ok, wait = n.w.due(restart{Name: "other", ID: "b1", Hash: 2})
	assert.False(t, ok)
	assert.Equal(t, DefaultSettleDelay, wait)
	assert.NotContains(t, n.w.seen, r, "forgotten")
	n.settle()
	ok, _ = n.w.due(restart{Name: "other", ID: "b1", Hash: 2})
	assert.True(t, ok)
	assert.Empty(t, n.w.seen)
}
