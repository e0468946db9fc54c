package broadcastjob

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// fixture is a Controller over fake clientsets whose caches the test seeds directly (informers never start), with
// a fake clock driving time and the queue's delays.
type fixture struct {
	*wiringtest.Fakes
	t   *testing.T
	c   *Controller
	job *appsv1alpha1.BroadcastJob
}

var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, job *appsv1alpha1.BroadcastJob, nodes ...*corev1.Node) *fixture {
	f := &fixture{Fakes: wiringtest.New(t, start, job), t: t, job: job}
	// The fake clientset does not fill in generateName as the API server does.
	var n atomic.Int32
	f.Kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n.Add(1))
		}
		return false, nil, nil
	})
	c, err := New(f.Deps())
	require.NoError(t, err)
	f.c = c
	t.Cleanup(c.Queue.ShutDown)
	f.setJob(job)
	for _, nd := range nodes {
		f.Cache(nd)
	}
	return f
}

func (f *fixture) key() types.NamespacedName {
	return types.NamespacedName{Namespace: f.job.Namespace, Name: f.job.Name}
}

// setJob puts job into the cache (as the informer would after a write).
func (f *fixture) setJob(job *appsv1alpha1.BroadcastJob) {
	f.job = job
	f.Cache(job)
}

func (f *fixture) addPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(f.job, controllerKind)}
	f.Cache(p)
}

// sync runs one sync and returns the write actions it made (reads are not interesting), then forgets them.
func (f *fixture) sync() ([]k8stesting.Action, error) {
	err := f.c.sync(context.Background(), f.key())
	out := f.Actions()
	f.Clear()
	return out, err
}

func verbs(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

// lastStatus is the status of the last status update among actions.
func lastStatus(t *testing.T, actions []k8stesting.Action) appsv1alpha1.BroadcastJobStatus {
	t.Helper()
	for i := len(actions) - 1; i >= 0; i-- {
		if u, ok := actions[i].(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
			return u.GetObject().(*appsv1alpha1.BroadcastJob).Status
		}
	}
	t.Fatal("no status update")
	return appsv1alpha1.BroadcastJobStatus{}
}

func testJob(mods ...func(*appsv1alpha1.BroadcastJob)) *appsv1alpha1.BroadcastJob {
	j := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: "bcj", Namespace: "ns", UID: "uid-1", ResourceVersion: "1"}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	j.Spec.Parallelism = ptr.To(intstrMax)
	j.Spec.CompletionPolicy.Type = appsv1alpha1.Always
	j.Spec.FailurePolicy.Type = appsv1alpha1.FailurePolicyTypeFailFast
	for _, m := range mods {
		m(j)
	}
	return j
}

func TestSyncOnePodPerEligibleNodeAndNoDuplicateOnStaleCache(t *testing.T) {
	tainted := node("n3", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})
	f := newFixture(t, testJob(), node("n1", nil), node("n2", nil), tainted)

	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "create pods", "update broadcastjobs/status"}, verbs(actions))
	var targets []string
	for _, a := range actions[:2] {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		targets = append(targets, nodeplacement.TargetNode(pod))
		assert.Empty(t, pod.Spec.NodeName)
	}
	assert.ElementsMatch(t, []string{"n1", "n2"}, targets)
	st := lastStatus(t, actions)
	assert.Equal(t, int32(2), st.Desired)
	assert.Equal(t, appsv1alpha1.PhaseRunning, st.Phase)
	assert.Equal(t, start, st.StartTime.Time.UTC())
	f.setJob(actions[2].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.BroadcastJob))

	// The cache has not caught up: no second pod on either node, and no status write (nothing changed).
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, verbs(actions))

	// An expectation whose pod never shows up expires, and the node gets a pod again.
	f.Clock.Step(ExpectationTTL)
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "create pods"}, verbs(actions))
}

// arrivingPods is a pod cache into which the created pods arrive at the first look-up by key: the moment the
// informer stores them can fall between any two reads of one sync.
type arrivingPods struct {
	cache.Indexer
	arrive func()
}

func (a *arrivingPods) GetByKey(key string) (any, bool, error) {
	if a.arrive != nil {
		a.arrive()
		a.arrive = nil
	}
	return a.Indexer.GetByKey(key)
}

// A created pod that reaches the cache in the middle of a sync is seen either as in flight or as the node's pod,
// never as neither (which would give its node a second pod).
func TestSyncPodArrivingMidSyncGetsNoTwin(t *testing.T) {
	f := newFixture(t, testJob(), node("n1", nil), node("n2", nil))
	actions, err := f.sync()
	require.NoError(t, err)
	require.Equal(t, []string{"create pods", "create pods", "update broadcastjobs/status"}, verbs(actions))
	f.setJob(actions[2].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.BroadcastJob))

	real := f.c.Pods
	created, err := f.Kube.CoreV1().Pods(f.job.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, created.Items, 2)
	f.Kube.ClearActions()
	f.c.Pods = &arrivingPods{Indexer: real, arrive: func() {
		for i := range created.Items {
			require.NoError(t, real.Add(&created.Items[i]))
		}
	}}
	defer func() { f.c.Pods = real }()
	actions, err = f.sync()
	require.NoError(t, err)
	assert.NotContains(t, verbs(actions), "create pods")
}

func TestSyncParallelismAndCompletion(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstrOf("50%")) }),
		node("n1", nil), node("n2", nil), node("n3", nil))
	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "create pods", "update broadcastjobs/status"}, verbs(actions), "50%% of 3 rounds up to 2")
	f.setJob(actions[2].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.BroadcastJob))
	f.addPod(jobPod("bcj-1", "n1", corev1.PodSucceeded, true))
	f.addPod(jobPod("bcj-2", "n2", corev1.PodRunning, true))

	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "update broadcastjobs/status"}, verbs(actions))
	assert.Equal(t, "n3", nodeplacement.TargetNode(actions[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)))
	f.setJob(actions[1].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.BroadcastJob))

	f.addPod(jobPod("bcj-2", "n2", corev1.PodSucceeded, true))
	f.addPod(jobPod("bcj-3", "n3", corev1.PodSucceeded, true))
	f.Clock.Step(time.Minute)
	actions, err = f.sync()
	require.NoError(t, err)
	st := lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseCompleted, st.Phase)
	assert.Equal(t, int32(3), st.Succeeded)
	assert.Equal(t, int32(0), st.Active)
	assert.Equal(t, start.Add(time.Minute), st.CompletionTime.Time.UTC())
	require.Len(t, st.Conditions, 1)
	assert.Equal(t, appsv1alpha1.JobComplete, st.Conditions[0].Type)
	assert.Contains(t, <-f.Recorder.Events, "Normal SuccessfulCreate")
}

func TestSyncDeadlineRequeuesOnTheClockAndFails(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
	}), node("n1", nil), node("n2", nil))
	actions, err := f.sync()
	require.NoError(t, err)
	f.setJob(lastJob(actions))
	f.addPod(jobPod("bcj-1", "n1", corev1.PodRunning, true))
	f.addPod(jobPod("bcj-2", "n2", corev1.PodSucceeded, true))
	assert.Zero(t, f.c.Queue.Len())

	f.Clock.Step(60 * time.Second)
	require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond, "requeued at the deadline")
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"delete pods", "update broadcastjobs/status"}, verbs(actions))
	assert.Equal(t, "bcj-1", actions[0].(k8stesting.DeleteAction).GetName())
	st := lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseFailed, st.Phase)
	assert.Equal(t, ReasonDeadlineExceeded, st.Conditions[0].Reason)
}

// failurePolicy Pause, as OpenKruise: a failed pod pauses the job in status only (spec.paused is never written),
// nothing is created or deleted while a failed pod exists, and deleting the failed pod resumes the job and gives
// its node a new pod.
func TestSyncPauseOnFailureLeavesSpecAlone(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.FailurePolicy.Type = appsv1alpha1.FailurePolicyTypePause
		j.Status.StartTime = ptr.To(metav1.NewTime(start))
	}), node("n1", nil), node("n2", nil), node("n3", nil))
	f.addPod(jobPod("bcj-1", "n1", corev1.PodFailed, true))
	f.addPod(jobPod("bcj-2", "n2", corev1.PodRunning, true))

	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"update broadcastjobs/status"}, verbs(actions), "no spec patch, no pod for n3")
	st := lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhasePaused, st.Phase)
	assert.Equal(t, int32(1), st.Failed)
	assert.False(t, lastJob(actions).Spec.Paused)
	assert.True(t, strings.HasPrefix(<-f.Recorder.Events, "Warning Paused"))
	f.setJob(lastJob(actions))

	// Still held on the next sync; no second event.
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, actions)
	assert.Empty(t, f.Recorder.Events)

	// The failed pod is deleted: the job runs again and n1 and n3 get a pod.
	f.Uncache(jobPod("bcj-1", "n1", corev1.PodFailed, true))
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "create pods", "update broadcastjobs/status"}, verbs(actions))
	assert.Equal(t, appsv1alpha1.PhaseRunning, lastStatus(t, actions).Phase)
}

// A failed pod is never replaced, whatever restartLimit (restartPolicy Never): the node keeps its failed pod.
func TestSyncFailedPodIsNotReplaced(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.FailurePolicy = appsv1alpha1.FailurePolicy{Type: appsv1alpha1.FailurePolicyTypeContinue, RestartLimit: 3}
		j.Status.StartTime = ptr.To(metav1.NewTime(start))
	}), node("n1", nil), node("n2", nil))
	f.addPod(jobPod("bcj-1", "n1", corev1.PodFailed, true))
	f.addPod(jobPod("bcj-2", "n2", corev1.PodSucceeded, true))

	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"update broadcastjobs/status"}, verbs(actions), "no retry on n1")
	st := lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseCompleted, st.Phase)
	assert.Equal(t, int32(1), st.Failed)
	assert.Equal(t, int32(1), st.Succeeded)
}

// restartPolicy OnFailure, as OpenKruise: container restarts beyond restartLimit count the pod as failed, but the
// pod is neither replaced nor stopped; under Continue the job waits for it, and if it then succeeds it counts as
// succeeded. Under FailFast the job fails at once (and, finished, deletes the pod).
func TestSyncRestartLimitCountsContainerRestarts(t *testing.T) {
	onFailure := func(tp appsv1alpha1.FailurePolicyType) func(*appsv1alpha1.BroadcastJob) {
		return func(j *appsv1alpha1.BroadcastJob) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.FailurePolicy = appsv1alpha1.FailurePolicy{Type: tp, RestartLimit: 2}
			j.Status.StartTime = ptr.To(metav1.NewTime(start))
		}
	}
	f := newFixture(t, testJob(onFailure(appsv1alpha1.FailurePolicyTypeContinue)), node("n1", nil))
	f.addPod(withRestarts(jobPod("bcj-1", "n1", corev1.PodRunning, true), 2))
	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"update broadcastjobs/status"}, verbs(actions))
	st := lastStatus(t, actions)
	assert.Equal(t, int32(1), st.Active, "two restarts are within restartLimit 2")
	assert.Equal(t, int32(0), st.Failed)
	f.setJob(lastJob(actions))

	f.addPod(withRestarts(jobPod("bcj-1", "n1", corev1.PodRunning, true), 3))
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"update broadcastjobs/status"}, verbs(actions), "no retry, no stop")
	st = lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseRunning, st.Phase, "the job waits for the pod")
	assert.Equal(t, int32(1), st.Failed)
	assert.Equal(t, int32(0), st.Active)
	f.setJob(lastJob(actions))

	f.addPod(withRestarts(jobPod("bcj-1", "n1", corev1.PodSucceeded, true), 3))
	actions, err = f.sync()
	require.NoError(t, err)
	st = lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseCompleted, st.Phase)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(0), st.Failed)

	f = newFixture(t, testJob(onFailure(appsv1alpha1.FailurePolicyTypeFailFast)), node("n1", nil))
	f.addPod(withRestarts(jobPod("bcj-1", "n1", corev1.PodRunning, true), 3))
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"delete pods", "update broadcastjobs/status"}, verbs(actions))
	st = lastStatus(t, actions)
	assert.Equal(t, ReasonFailFast, st.Conditions[0].Reason)
	assert.Equal(t, int32(1), st.Failed)
}

// A pod whose node no longer fits it (here: relabelled so the nodeSelector misses, and tainted) is deleted even
// though it is bound and running, and the node leaves status.desired.
func TestSyncDeletesPodsOnNodesNoLongerEligible(t *testing.T) {
	sel := map[string]string{"run": "yes"}
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.NodeSelector = sel
		j.Status.StartTime = ptr.To(metav1.NewTime(start))
	}), node("n1", sel), node("n2", nil), node("n3", sel, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}))
	for i, n := range []string{"n1", "n2", "n3"} {
		p := jobPod(fmt.Sprintf("bcj-%d", i+1), n, corev1.PodRunning, true)
		p.Spec.NodeSelector = sel
		f.addPod(p)
	}
	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"delete pods", "delete pods", "update broadcastjobs/status"}, verbs(actions))
	assert.ElementsMatch(t, []string{"bcj-2", "bcj-3"}, []string{actions[0].(k8stesting.DeleteAction).GetName(), actions[1].(k8stesting.DeleteAction).GetName()})
	assert.Equal(t, int32(1), lastStatus(t, actions).Desired)
}

// The template's requests must fit a node's allocatable for it to get a pod; a node that does not fit is not
// desired (not counted at all), and one that shrinks under its pod loses the pod.
func TestSyncResourceFit(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	}), node("big", nil), withAllocatable(node("small", nil), corev1.ResourceCPU, "2"))
	actions, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"create pods", "update broadcastjobs/status"}, verbs(actions))
	pod := actions[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	assert.Equal(t, "big", nodeplacement.TargetNode(pod))
	assert.Equal(t, int32(1), lastStatus(t, actions).Desired)
	f.setJob(lastJob(actions))

	pod.Spec.NodeName = "big"
	pod.Status.Phase = corev1.PodRunning
	f.addPod(pod)
	f.Cache(withAllocatable(node("big", nil), corev1.ResourceCPU, "2"))
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"delete pods", "update broadcastjobs/status"}, verbs(actions))
	assert.Equal(t, int32(0), lastStatus(t, actions).Desired)
}

func TestSyncInvalidSpecFailsOnceWithoutPods(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }), node("n1", nil))
	actions, err := f.sync()
	require.NoError(t, err, "a permanently invalid spec is not retried")
	assert.Equal(t, []string{"update broadcastjobs/status"}, verbs(actions))
	st := lastStatus(t, actions)
	assert.Equal(t, ReasonInvalidSpec, st.Conditions[0].Reason)
	assert.Contains(t, st.Conditions[0].Message, "restartPolicy")
	assert.True(t, strings.HasPrefix(<-f.Recorder.Events, "Warning InvalidSpec"))
	f.setJob(lastJob(actions))

	actions, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, actions, "nothing more to do, nothing written")
	assert.Empty(t, f.Recorder.Events, "no repeated event")
}

func TestSyncTTLDeletesTheJob(t *testing.T) {
	f := newFixture(t, testJob(func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](30)
	}))
	actions, err := f.sync()
	require.NoError(t, err)
	st := lastStatus(t, actions)
	assert.Equal(t, appsv1alpha1.PhaseCompleted, st.Phase, "no eligible node: nothing to do")
	f.setJob(lastJob(actions))

	actions, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, actions)
	f.Clock.Step(30 * time.Second)
	actions, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"delete broadcastjobs"}, verbs(actions))
}

func lastJob(actions []k8stesting.Action) *appsv1alpha1.BroadcastJob {
	for i := len(actions) - 1; i >= 0; i-- {
		if u, ok := actions[i].(k8stesting.UpdateAction); ok {
			if j, ok := u.GetObject().(*appsv1alpha1.BroadcastJob); ok {
				return j
			}
		}
	}
	return nil
}
