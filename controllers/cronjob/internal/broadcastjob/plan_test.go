package broadcastjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// jobPod is a pod of the test job pinned to node, in phase (empty = Pending), bound when bound is true.
func jobPod(name, node string, phase corev1.PodPhase, bound bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
	p.Spec.Affinity = pinToNode(nil, node)
	if bound {
		p.Spec.NodeName = node
	}
	return p
}

func withRestarts(p *corev1.Pod, n int32) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: n}}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestTallyPods(t *testing.T) {
	cases := []struct {
		name         string
		pods         []*corev1.Pod
		restartLimit int32
		want         map[string]nodeOutcome
		active       []string
		overLimit    []string
		succ, fail   int32
	}{
		{name: "no pods", want: map[string]nodeOutcome{}},
		{name: "one pod per state",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true),
				jobPod("c", "n3", corev1.PodFailed, true), jobPod("d", "n4", "", false)},
			want:   map[string]nodeOutcome{"n1": nodeActive, "n2": nodeSucceeded, "n3": nodeFailed, "n4": nodeActive},
			active: []string{"a", "d"}, succ: 1, fail: 1},
		{name: "failed pod with retries left is due a retry",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true)}, restartLimit: 1,
			want: map[string]nodeOutcome{"n1": nodeRetry}},
		{name: "retry running",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true), jobPod("b", "n1", corev1.PodRunning, true)}, restartLimit: 1,
			want: map[string]nodeOutcome{"n1": nodeActive}, active: []string{"b"}},
		{name: "retries used up",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true), jobPod("b", "n1", corev1.PodFailed, true)}, restartLimit: 1,
			want: map[string]nodeOutcome{"n1": nodeFailed}, fail: 1},
		{name: "retry succeeded counts the node once, as succeeded",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true), jobPod("b", "n1", corev1.PodSucceeded, true)}, restartLimit: 3,
			want: map[string]nodeOutcome{"n1": nodeSucceeded}, succ: 1},
		{name: "in-place restarts within the limit",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 2)}, restartLimit: 2,
			want: map[string]nodeOutcome{"n1": nodeActive}, active: []string{"a"}},
		{name: "in-place restarts over the limit fail the node and stop the pod",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 3)}, restartLimit: 2,
			want: map[string]nodeOutcome{"n1": nodeFailed}, overLimit: []string{"a"}, fail: 1},
		{name: "failed pods and restarts add up",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true), withRestarts(jobPod("b", "n1", corev1.PodRunning, true), 1)}, restartLimit: 1,
			want: map[string]nodeOutcome{"n1": nodeFailed}, overLimit: []string{"b"}, fail: 1},
		{name: "restarts of a succeeded pod do not count",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodSucceeded, true), 5)},
			want: map[string]nodeOutcome{"n1": nodeSucceeded}, succ: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tallyPods(tc.pods, tc.restartLimit)
			assert.Equal(t, tc.want, got.outcome)
			assert.ElementsMatch(t, tc.active, names(got.active))
			assert.ElementsMatch(t, tc.overLimit, names(got.overLimit))
			assert.Equal(t, tc.succ, got.succeeded)
			assert.Equal(t, tc.fail, got.failed)
		})
	}
}

func TestPlanPods(t *testing.T) {
	terminating := jobPod("t", "n1", corev1.PodRunning, true)
	terminating.DeletionTimestamp = &metav1.Time{}
	stopped := withRestarts(jobPod("s", "n2", corev1.PodRunning, true), 5)
	stopped.Spec.ActiveDeadlineSeconds = ptr.To[int64](stopDeadlineSeconds)

	cases := []struct {
		name        string
		eligible    []string
		pods        []*corev1.Pod
		inFlight    []string
		parallelism int
		paused      bool
		finished    bool
		limit       int32
		create      []string
		delete      []string
		stop        []string
	}{
		{name: "one pod per eligible node", eligible: []string{"n1", "n2", "n3"}, parallelism: 100, create: []string{"n1", "n2", "n3"}},
		{name: "nodes with a pod get none", eligible: []string{"n1", "n2", "n3"}, parallelism: 100,
			pods:   []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true)},
			create: []string{"n3"}},
		{name: "parallelism counts active pods", eligible: []string{"n1", "n2", "n3", "n4"}, parallelism: 2,
			pods:   []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true)},
			create: []string{"n3"}},
		{name: "parallelism counts in-flight creates", eligible: []string{"n1", "n2", "n3"}, parallelism: 2, inFlight: []string{"n1"},
			create: []string{"n2"}},
		{name: "in-flight node never gets a second pod", eligible: []string{"n1"}, parallelism: 5, inFlight: []string{"n1"}},
		{name: "parallelism 0 creates nothing", eligible: []string{"n1"}, parallelism: 0},
		{name: "terminating pod holds its node and slot", eligible: []string{"n1", "n2"}, parallelism: 1, pods: []*corev1.Pod{terminating}},
		{name: "paused creates nothing", eligible: []string{"n1"}, parallelism: 5, paused: true},
		{name: "retry within restartLimit", eligible: []string{"n1"}, parallelism: 5, limit: 1,
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true)}, create: []string{"n1"}},
		{name: "no retry past restartLimit", eligible: []string{"n1"}, parallelism: 5,
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true)}},
		{name: "finished deletes active pods", eligible: []string{"n1", "n2", "n3"}, parallelism: 5, finished: true,
			pods:   []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true), jobPod("c", "n3", "", false), terminating},
			delete: []string{"a", "c"}},
		{name: "unbound pod of an ineligible node is deleted", eligible: []string{"n1"}, parallelism: 5,
			pods:   []*corev1.Pod{jobPod("a", "gone", "", false), jobPod("b", "tainted", corev1.PodRunning, true)},
			create: []string{"n1"}, delete: []string{"a"}},
		{name: "over-limit pod is stopped once", eligible: []string{"n1", "n2"}, parallelism: 5, limit: 1,
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 2), stopped},
			stop: []string{"a"}},
		{name: "over-limit pod deleted when finished", eligible: []string{"n1"}, parallelism: 5, finished: true,
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 2)}, delete: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planPods(planInput{eligible: tc.eligible, tally: tallyPods(tc.pods, tc.limit), inFlight: sets.New(tc.inFlight...),
				parallelism: tc.parallelism, canCreate: !tc.paused, finished: tc.finished})
			assert.Equal(t, tc.create, got.create, "create")
			assert.ElementsMatch(t, tc.delete, names(got.delete), "delete")
			assert.ElementsMatch(t, tc.stop, names(got.stop), "stop")
		})
	}
}

func TestResolveParallelism(t *testing.T) {
	for _, tc := range []struct {
		p       *intstr.IntOrString
		desired int
		want    int
	}{
		{nil, 7, 7},
		{ptr.To(intstr.FromInt32(3)), 7, 3},
		{ptr.To(intstr.FromInt32(2147483647)), 7, 2147483647},
		{ptr.To(intstr.FromString("50%")), 5, 3}, // rounded up
		{ptr.To(intstr.FromString("0%")), 5, 0},
		{ptr.To(intstr.FromString("100%")), 0, 0},
	} {
		got, err := resolveParallelism(tc.p, tc.desired)
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v of %d", tc.p, tc.desired)
	}
	_, err := resolveParallelism(ptr.To(intstr.FromString("half")), 5)
	assert.Error(t, err)
}

func TestJudge(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(d))) }
	type mod func(*appsv1alpha1.BroadcastJob)
	build := func(mods ...mod) *appsv1alpha1.BroadcastJob {
		j := &appsv1alpha1.BroadcastJob{}
		j.Spec.CompletionPolicy.Type = appsv1alpha1.Always
		j.Spec.FailurePolicy.Type = appsv1alpha1.FailurePolicyTypeContinue
		j.Status.StartTime = at(-time.Minute)
		for _, m := range mods {
			m(j)
		}
		return j
	}
	never := func(j *appsv1alpha1.BroadcastJob) { j.Spec.CompletionPolicy.Type = appsv1alpha1.Never }
	failure := func(tp appsv1alpha1.FailurePolicyType) mod {
		return func(j *appsv1alpha1.BroadcastJob) { j.Spec.FailurePolicy.Type = tp }
	}
	deadline := func(s int64) mod {
		return func(j *appsv1alpha1.BroadcastJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = &s }
	}
	ttl := func(s int32) mod {
		return func(j *appsv1alpha1.BroadcastJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = &s }
	}
	finishedAgo := func(d time.Duration) mod {
		return func(j *appsv1alpha1.BroadcastJob) {
			j.Status.Conditions = []appsv1alpha1.JobCondition{*newCondition(appsv1alpha1.JobComplete, ReasonCompleted, "", now.Add(-d))}
			j.Status.CompletionTime = at(-d)
		}
	}
	running := tallyPods([]*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true)}, 0)
	done := tallyPods([]*corev1.Pod{jobPod("a", "n1", corev1.PodSucceeded, true), jobPod("b", "n2", corev1.PodFailed, true)}, 0)
	oneFailed := tallyPods([]*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodFailed, true)}, 0)
	both := []string{"n1", "n2"}

	cases := []struct {
		name      string
		job       *appsv1alpha1.BroadcastJob
		tally     nodeTally
		eligible  []string
		inFlight  int
		invalid   string
		finish    appsv1alpha1.JobConditionType
		reason    string
		pause     bool
		deleteJob bool
		requeue   time.Duration
	}{
		{name: "running", job: build(), tally: running, eligible: both},
		{name: "all nodes finished completes", job: build(), tally: done, eligible: both, finish: appsv1alpha1.JobComplete, reason: ReasonCompleted},
		{name: "no eligible node completes at once", job: build(), eligible: nil, finish: appsv1alpha1.JobComplete, reason: ReasonCompleted},
		{name: "in-flight create blocks completion", job: build(), tally: done, eligible: both, inFlight: 1},
		{name: "a node without a pod blocks completion", job: build(), tally: done, eligible: []string{"n1", "n2", "n3"}},
		{name: "Never does not complete", job: build(never), tally: done, eligible: both},
		{name: "deadline not yet passed requeues", job: build(deadline(90)), tally: running, eligible: both, requeue: 30 * time.Second},
		{name: "deadline passed fails", job: build(deadline(60)), tally: running, eligible: both, finish: appsv1alpha1.JobFailed, reason: ReasonDeadlineExceeded},
		{name: "Never ignores the deadline", job: build(never, deadline(1)), tally: running, eligible: both},
		{name: "FailFast fails on a failed node", job: build(failure(appsv1alpha1.FailurePolicyTypeFailFast)), tally: oneFailed, eligible: both, finish: appsv1alpha1.JobFailed, reason: ReasonFailFast},
		{name: "FailFast applies to Never too", job: build(never, failure(appsv1alpha1.FailurePolicyTypeFailFast)), tally: oneFailed, eligible: both, finish: appsv1alpha1.JobFailed, reason: ReasonFailFast},
		{name: "Continue keeps going", job: build(), tally: oneFailed, eligible: both},
		{name: "Pause pauses on a new failure", job: build(failure(appsv1alpha1.FailurePolicyTypePause)), tally: oneFailed, eligible: both, pause: true},
		{name: "Pause does not re-pause on a failure already reported", job: build(failure(appsv1alpha1.FailurePolicyTypePause),
			func(j *appsv1alpha1.BroadcastJob) { j.Status.Failed = 1 }), tally: oneFailed, eligible: both},
		{name: "invalid spec fails", job: build(), eligible: both, invalid: "bad", finish: appsv1alpha1.JobFailed, reason: ReasonInvalidSpec},
		{name: "finished without TTL stays", job: build(finishedAgo(time.Hour)), tally: done, eligible: both},
		{name: "TTL not yet passed requeues", job: build(ttl(100), finishedAgo(40*time.Second)), tally: done, eligible: both, requeue: 60 * time.Second},
		{name: "TTL passed deletes", job: build(ttl(30), finishedAgo(40*time.Second)), tally: done, eligible: both, deleteJob: true},
		{name: "TTL 0 deletes at once", job: build(ttl(0), finishedAgo(0)), tally: done, eligible: both, deleteJob: true},
		{name: "Never ignores TTL", job: build(never, ttl(0), finishedAgo(time.Minute)), tally: done, eligible: both},
		{name: "finished job is not re-judged", job: build(finishedAgo(time.Minute), failure(appsv1alpha1.FailurePolicyTypeFailFast)), tally: oneFailed, eligible: both, invalid: "bad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(judgeInput{job: tc.job, tally: tc.tally, eligible: tc.eligible, inFlight: tc.inFlight, invalid: tc.invalid, now: now})
			if tc.finish == "" {
				assert.Nil(t, v.finish)
			} else if assert.NotNil(t, v.finish) {
				assert.Equal(t, tc.finish, v.finish.Type)
				assert.Equal(t, tc.reason, v.finish.Reason)
				assert.Equal(t, corev1.ConditionTrue, v.finish.Status)
			}
			assert.Equal(t, tc.pause, v.pause, "pause")
			assert.Equal(t, tc.deleteJob, v.deleteJob, "deleteJob")
			assert.Equal(t, tc.requeue, v.requeueAfter, "requeueAfter")
		})
	}
}

var intstrMax = intstr.FromInt32(2147483647)

func intstrOf(s string) intstr.IntOrString { return intstr.FromString(s) }
