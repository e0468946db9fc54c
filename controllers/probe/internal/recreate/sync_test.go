package recreate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// fakeRuntime has containers a (a1) and b (b1) of pod uid-1 running; StopContainer fails for the IDs in
// failStop and records the others.
type fakeRuntime struct {
	failStop map[string]bool
	stopped  []string
	execs    [][]string
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	var out []*runtimeapi.Container
	for _, id := range []string{"a1", "b1"} {
		state := runtimeapi.ContainerState_CONTAINER_RUNNING
		for _, s := range f.stopped {
			if s == id {
				state = runtimeapi.ContainerState_CONTAINER_EXITED
			}
		}
		out = append(out, &runtimeapi.Container{Id: id, State: state, Metadata: &runtimeapi.ContainerMetadata{Name: id[:1]}})
	}
	return out, nil
}

func (f *fakeRuntime) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.execs = append(f.execs, cmd)
	return nil, nil, nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ int64) error {
	if f.failStop[id] {
		return errors.New("boom")
	}
	f.stopped = append(f.stopped, id)
	return nil
}

// runSyncs runs the worker's sync for pod p until the request stops changing (each sync does at most one write,
// as with the informer's events), feeding every write back into the cache.
func runSyncs(t *testing.T, policy appsv1alpha1.ContainerRecreateRequestFailurePolicyType, rt *fakeRuntime) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr := request(appsv1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: policy}, nil, "")
	crr.Namespace, crr.Status.Phase = "ns", ""
	crr.Labels = map[string]string{appsv1alpha1.ContainerRecreateRequestPodUIDKey: "uid-1"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"bye"}}}}}, {Name: "b"}}}}
	client := fake.NewSimpleClientset(crr)
	podInf := informers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0).Core().V1().Pods().Informer()
	require.NoError(t, podInf.GetIndexer().Add(pod))
	crrInf := flotillainformers.NewSharedInformerFactory(client, 0).Apps().V1alpha1().ContainerRecreateRequests().Informer()
	w, err := New(Deps{NodeName: "n", Requests: func(ns string) StatusWriter { return client.AppsV1alpha1().ContainerRecreateRequests(ns) },
		RequestInformer: crrInf, PodInformer: podInf, Runtime: rt, Clock: clocktesting.NewFakeClock(t0),
		Recorder: record.NewFakeRecorder(100), Queue: controller.DefaultQueueOptions()})
	require.NoError(t, err)
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	for i := 0; i < 10; i++ {
		cur, err := client.AppsV1alpha1().ContainerRecreateRequests("ns").Get(context.Background(), "r", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, w.index.Update(cur))
		if cur.Status.CompletionTime != nil {
			return cur
		}
		require.NoError(t, w.sync(context.Background(), key))
	}
	cur, err := client.AppsV1alpha1().ContainerRecreateRequests("ns").Get(context.Background(), "r", metav1.GetOptions{})
	require.NoError(t, err)
	return cur
}

// failurePolicy Fail: a container that cannot be stopped fails the request at once; Ignore: the others go on.
func TestFailurePolicy(t *testing.T) {
	rt := &fakeRuntime{failStop: map[string]bool{"a1": true}}
	got := runSyncs(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, rt)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.NotNil(t, got.Status.CompletionTime)
	assert.Equal(t, failedP, got.Status.ContainerRecreateStates[0].Phase)
	assert.Equal(t, "kill container error: boom", got.Status.ContainerRecreateStates[0].Message)
	assert.Equal(t, [][]string{{"bye"}}, rt.execs, "the pod's preStop ran before the stop was tried")

	rt = &fakeRuntime{failStop: map[string]bool{"a1": true}}
	got = runSyncs(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, rt)
	assert.Nil(t, got.Status.CompletionTime, "b still recreating")
	assert.Equal(t, failedP, got.Status.ContainerRecreateStates[0].Phase)
	assert.Equal(t, recreating, got.Status.ContainerRecreateStates[1].Phase)
	assert.Equal(t, []string{"b1"}, rt.stopped, "b stopped despite a's failure")
}
