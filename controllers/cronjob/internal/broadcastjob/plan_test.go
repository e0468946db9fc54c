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
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

// jobPod is a pod of the test job pinned to node, in phase (empty = Pending), bound when bound is true.
func jobPod(name, node string, phase corev1.PodPhase, bound bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
	p.Spec.Affinity = nodeplacement.PinToNode(nil, node)
	if bound {
		p.Spec.NodeName = node
	}
	return p
}

// withRestarts gives p restartPolicy OnFailure and n restarts of its one container.
func withRestarts(p *corev1.Pod, n int32) *corev1.Pod {
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
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
	neverRestarted := jobPod("n", "n1", corev1.PodRunning, true)
	neverRestarted.Spec.RestartPolicy = corev1.RestartPolicyNever
	neverRestarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 9}}
	terminating := withRestarts(jobPod("t", "n1", corev1.PodRunning, true), 9)
	terminating.DeletionTimestamp = &metav1.Time{}
	initRestarts := withRestarts(jobPod("i", "n1", corev1.PodPending, true), 1)
	initRestarts.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", RestartCount: 1}}

	cases := []struct {
		name         string
		pods         []*corev1.Pod
		restartLimit int32
		active       []string
		overLimit    []string
		succ, fail   int32
	}{
		{name: "no pods"},
		{name: "one pod per state",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true),
				jobPod("c", "n3", corev1.PodFailed, true), jobPod("d", "n4", "", false)},
			active: []string{"a", "d"}, succ: 1, fail: 1},
		{name: "a failed pod counts as failed whatever restartLimit (restartPolicy Never)",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true)}, restartLimit: 3, fail: 1},
		{name: "counters are per pod",
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodFailed, true), jobPod("b", "n1", corev1.PodSucceeded, true)}, succ: 1, fail: 1},
		{name: "OnFailure: restarts up to the limit stay active",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 2)}, restartLimit: 2, active: []string{"a"}},
		{name: "OnFailure: restarts over the limit count as failed, the pod is left running",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 3)}, restartLimit: 2, overLimit: []string{"a"}, fail: 1},
		{name: "OnFailure: restartLimit 0 fails on the first restart",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 1)}, overLimit: []string{"a"}, fail: 1},
		{name: "init container restarts are added", pods: []*corev1.Pod{initRestarts}, restartLimit: 1, overLimit: []string{"i"}, fail: 1},
		{name: "Never: restart counts are not looked at", pods: []*corev1.Pod{neverRestarted}, active: []string{"n"}},
		{name: "an over-limit pod that succeeds counts as succeeded",
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodSucceeded, true), 5)}, succ: 1},
		{name: "a terminating pod is active, not failed", pods: []*corev1.Pod{terminating}, active: []string{"t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tallyPods(tc.pods, tc.restartLimit)
			assert.ElementsMatch(t, tc.active, names(got.active))
			assert.ElementsMatch(t, tc.overLimit, names(got.overLimit))
			assert.Equal(t, tc.succ, got.succeeded)
			assert.Equal(t, tc.fail, got.failed)
			n := 0
			for _, pods := range got.byNode {
				n += len(pods)
			}
			assert.Equal(t, len(tc.pods), n, "every pod is grouped by node")
		})
	}
}

func TestPlanPods(t *testing.T) {
	terminating := jobPod("t", "n1", corev1.PodRunning, true)
	terminating.DeletionTimestamp = &metav1.Time{}
	gone := jobPod("g", "n9", corev1.PodRunning, true)

	cases := []struct {
		name        string
		free        []string
		evict       []*corev1.Pod
		pods        []*corev1.Pod
		inFlight    []string
		parallelism int
		paused      bool
		finished    bool
		create      []string
		delete      []string
	}{
		{name: "one pod per free node", free: []string{"n1", "n2", "n3"}, parallelism: 100, create: []string{"n1", "n2", "n3"}},
		{name: "parallelism counts active pods", free: []string{"n3", "n4"}, parallelism: 2,
			pods:   []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true)},
			create: []string{"n3"}},
		{name: "an over-limit pod frees its parallelism slot", free: []string{"n2"}, parallelism: 1,
			pods: []*corev1.Pod{withRestarts(jobPod("a", "n1", corev1.PodRunning, true), 1)}, create: []string{"n2"}},
		{name: "parallelism counts in-flight creates", free: []string{"n1", "n2", "n3"}, parallelism: 2, inFlight: []string{"n1"},
			create: []string{"n2"}},
		{name: "in-flight node never gets a second pod", free: []string{"n1"}, parallelism: 5, inFlight: []string{"n1"}},
		{name: "parallelism 0 creates nothing", free: []string{"n1"}, parallelism: 0},
		{name: "terminating pod holds its slot", free: []string{"n2"}, parallelism: 1, pods: []*corev1.Pod{terminating}},
		{name: "evicted pods are deleted", free: []string{"n1"}, parallelism: 5, evict: []*corev1.Pod{gone}, pods: []*corev1.Pod{gone},
			create: []string{"n1"}, delete: []string{"g"}},
		{name: "paused: nothing created, nothing evicted", free: []string{"n1"}, parallelism: 5, paused: true,
			evict: []*corev1.Pod{gone}, pods: []*corev1.Pod{gone}},
		{name: "finished deletes every pod still running, over-limit ones included", free: []string{"n4"}, parallelism: 5, finished: true,
			pods: []*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true),
				jobPod("c", "n3", "", false), terminating, withRestarts(jobPod("o", "n5", corev1.PodRunning, true), 3)},
			delete: []string{"a", "c", "o"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planPods(planInput{place: placement{free: tc.free, evict: tc.evict}, tally: tallyPods(tc.pods, 0),
				inFlight: sets.New(tc.inFlight...), parallelism: tc.parallelism, paused: tc.paused, finished: tc.finished})
			assert.Equal(t, tc.create, got.create, "create")
			assert.ElementsMatch(t, tc.delete, names(got.delete), "delete")
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
	overLimit := tallyPods([]*corev1.Pod{jobPod("a", "n1", corev1.PodSucceeded, true), withRestarts(jobPod("b", "n2", corev1.PodRunning, true), 1)}, 0)
	both := []string{"n1", "n2"}
	paused := func(j *appsv1alpha1.BroadcastJob) { j.Spec.Paused = true }
	phasePaused := func(j *appsv1alpha1.BroadcastJob) { j.Status.Phase = appsv1alpha1.PhasePaused }

	cases := []struct {
		name      string
		job       *appsv1alpha1.BroadcastJob
		tally     podTally
		eligible  []string
		inFlight  int
		invalid   string
		finish    appsv1alpha1.JobConditionType
		reason    string
		pause     bool
		event     bool
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
		{name: "Continue waits for a pod over its restart limit", job: build(), tally: overLimit, eligible: both},
		{name: "FailFast counts a pod over its restart limit", job: build(failure(appsv1alpha1.FailurePolicyTypeFailFast)), tally: overLimit, eligible: both,
			finish: appsv1alpha1.JobFailed, reason: ReasonFailFast},
		{name: "Pause holds the job while a failed pod exists", job: build(failure(appsv1alpha1.FailurePolicyTypePause)), tally: oneFailed, eligible: both,
			pause: true, event: true},
		{name: "Pause: the event only when it pauses", job: build(failure(appsv1alpha1.FailurePolicyTypePause), phasePaused), tally: oneFailed,
			eligible: both, pause: true},
		{name: "Pause holds a job whose nodes all finished: no completion", job: build(failure(appsv1alpha1.FailurePolicyTypePause)), tally: done,
			eligible: both, pause: true, event: true},
		{name: "Pause holds past the deadline", job: build(failure(appsv1alpha1.FailurePolicyTypePause), deadline(1)), tally: oneFailed,
			eligible: both, pause: true, event: true},
		{name: "Pause without failed pods runs", job: build(failure(appsv1alpha1.FailurePolicyTypePause), phasePaused), tally: running, eligible: both},
		{name: "spec.paused comes before FailFast", job: build(paused, failure(appsv1alpha1.FailurePolicyTypeFailFast)), tally: oneFailed,
			eligible: both, pause: true},
		{name: "spec.paused comes before the deadline and completion", job: build(paused, deadline(1)), tally: done, eligible: both, pause: true},
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
			v := judge(judgeInput{job: tc.job, tally: tc.tally, desired: tc.eligible, inFlight: tc.inFlight, invalid: tc.invalid, now: now})
			if tc.finish == "" {
				assert.Nil(t, v.finish)
			} else if assert.NotNil(t, v.finish) {
				assert.Equal(t, tc.finish, v.finish.Type)
				assert.Equal(t, tc.reason, v.finish.Reason)
				assert.Equal(t, corev1.ConditionTrue, v.finish.Status)
			}
			assert.Equal(t, tc.pause, v.paused, "paused")
			assert.Equal(t, tc.event, v.pauseEvent, "pauseEvent")
			assert.Equal(t, tc.deleteJob, v.deleteJob, "deleteJob")
			assert.Equal(t, tc.requeue, v.requeueAfter, "requeueAfter")
		})
	}
}

var intstrMax = intstr.FromInt32(2147483647)

func intstrOf(s string) intstr.IntOrString { return intstr.FromString(s) }
