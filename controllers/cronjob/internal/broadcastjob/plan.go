package broadcastjob

import (
	"fmt"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// podTally sorts the job's pods the way OpenKruise counts them: per pod. A pod that failed is never replaced, so
// in practice that is one pod per node.
type podTally struct {
	byNode map[string][]*corev1.Pod // every pod, by the node it targets
	// active are the pods not finished and not over the restart limit (terminating ones included: they still hold
	// the node and a parallelism slot). len(active) is status.active.
	active []*corev1.Pod
	// overLimit are running pods (restartPolicy OnFailure) whose container restarts exceed restartLimit. They count
	// as failed, but keep running: they may still succeed, and a job waits for them to end before it completes.
	overLimit         []*corev1.Pod
	succeeded, failed int32
}

// tallyPods counts succeeded and failed pods. restartLimit only matters under restartPolicy OnFailure, as in
// OpenKruise: a running pod whose containers (init containers included) restarted more than restartLimit times in
// all counts as failed. Under Never a pod fails when it ends Failed, and restartLimit plays no part.
func tallyPods(pods []*corev1.Pod, restartLimit int32) podTally {
	t := podTally{byNode: map[string][]*corev1.Pod{}}
	for _, p := range pods {
		n := nodeplacement.TargetNode(p)
		t.byNode[n] = append(t.byNode[n], p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			t.succeeded++
		case p.Status.Phase == corev1.PodFailed:
			t.failed++
		case p.DeletionTimestamp == nil && overRestartLimit(p, restartLimit):
			t.failed++
			t.overLimit = append(t.overLimit, p)
		default:
			t.active = append(t.active, p)
		}
	}
	return t
}

// overRestartLimit reports whether an OnFailure pod's containers restarted more than restartLimit times.
func overRestartLimit(p *corev1.Pod, restartLimit int32) bool {
	return p.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && containerRestarts(p) > restartLimit
}

// allFinished reports whether every node in nodes has a pod and all of them ended (succeeded or failed). A pod
// over its restart limit has not ended: it is still running.
func (t podTally) allFinished(nodes []string) bool {
	for _, n := range nodes {
		pods := t.byNode[n]
		if len(pods) == 0 {
			return false
		}
		for _, p := range pods {
			if !podFinished(p) {
				return false
			}
		}
	}
	return true
}

// planInput is everything the pod plan depends on.
type planInput struct {
	place       placement        // from place
	tally       podTally         // from tallyPods
	inFlight    sets.Set[string] // nodes with a pod created but not yet in the cache
	parallelism int              // resolved cap on active pods
	paused      bool             // spec.paused, or failurePolicy Pause holding the job: pods are left as they are
	finished    bool             // the job is over: every pod still running goes
}

// podPlan is what to do to pods in this sync.
type podPlan struct {
	create []string      // nodes that get a new pod
	delete []*corev1.Pod // pods to delete
}

// planPods decides creates and deletes. A finished job deletes every pod still running (those over their restart
// limit included). A paused job changes nothing. Otherwise pods their node no longer fits are deleted, and
// desired nodes that have no pod yet get one, in order, as long as active pods (plus in-flight creates) stay
// within parallelism. A node keeps its pod whatever became of it: a failed pod is never replaced.
func planPods(in planInput) podPlan {
	var p podPlan
	if in.finished {
		for _, pod := range append(append([]*corev1.Pod(nil), in.tally.active...), in.tally.overLimit...) {
			if pod.DeletionTimestamp == nil {
				p.delete = append(p.delete, pod)
			}
		}
		return p
	}
	if in.paused {
		return p
	}
	p.delete = in.place.evict
	budget := in.parallelism - len(in.tally.active) - in.inFlight.Len()
	for _, node := range in.place.free {
		if budget <= 0 {
			break
		}
		if in.inFlight.Has(node) {
			continue
		}
		p.create = append(p.create, node)
		budget--
	}
	return p
}

// resolveParallelism turns spec.parallelism into a pod count; a percentage is of the eligible nodes, rounded up.
// Unset means unlimited.
func resolveParallelism(p *intstr.IntOrString, desired int) (int, error) {
	if p == nil {
		return desired, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(p, desired, true)
	if err != nil {
		return 0, fmt.Errorf("parallelism %s: %w", p.String(), err)
	}
	return n, nil
}

// verdict is the job-level decision of one sync.
type verdict struct {
	finish       *appsv1alpha1.JobCondition // the job ends now with this condition
	paused       bool                       // spec.paused, or failurePolicy Pause with failed pods: nothing moves
	pauseEvent   bool                       // failurePolicy Pause has just paused the job
	deleteJob    bool                       // ttlSecondsAfterFinished has passed
	requeueAfter time.Duration              // when time alone changes the verdict (deadline, TTL); 0 = never
}

// judgeInput is what the verdict depends on.
type judgeInput struct {
	job      *appsv1alpha1.BroadcastJob
	tally    podTally
	desired  []string
	inFlight int
	invalid  string // why the spec cannot run, "" if it can
	now      time.Time
}

// judge decides in OpenKruise's order: TTL of a finished job; a runtime-invalid spec; spec.paused (nothing else
// is looked at, not even the deadline, until the job is unpaused); failed pods under failurePolicy FailFast (the
// job fails) or Pause (the job is paused, in status only, for as long as failed pods exist: deleting them resumes
// it, and their nodes get new pods); then, under completionPolicy Always, the active deadline and completion.
func judge(in judgeInput) verdict {
	job := in.job
	always := job.Spec.CompletionPolicy.Type != appsv1alpha1.Never
	if cond := finishedCondition(job.Status); cond != nil {
		ttl := job.Spec.CompletionPolicy.TTLSecondsAfterFinished
		if !always || ttl == nil {
			return verdict{}
		}
		finishedAt := cond.LastTransitionTime.Time
		if job.Status.CompletionTime != nil {
			finishedAt = job.Status.CompletionTime.Time
		}
		if left := finishedAt.Add(time.Duration(*ttl) * time.Second).Sub(in.now); left > 0 {
			return verdict{requeueAfter: left}
		}
		return verdict{deleteJob: true}
	}
	if in.invalid != "" {
		return verdict{finish: newCondition(appsv1alpha1.JobFailed, ReasonInvalidSpec, in.invalid, in.now)}
	}
	if job.Spec.Paused {
		return verdict{paused: true}
	}
	if in.tally.failed > 0 {
		switch job.Spec.FailurePolicy.Type {
		case appsv1alpha1.FailurePolicyTypePause:
			return verdict{paused: true, pauseEvent: job.Status.Phase != appsv1alpha1.PhasePaused}
		case appsv1alpha1.FailurePolicyTypeFailFast:
			return verdict{finish: newCondition(appsv1alpha1.JobFailed, ReasonFailFast,
				fmt.Sprintf("failurePolicy is FailFast and %d pod(s) failed", in.tally.failed), in.now)}
		}
	}
	if !always {
		return verdict{}
	}
	var v verdict
	if ads := job.Spec.CompletionPolicy.ActiveDeadlineSeconds; ads != nil {
		started := in.now // the first sync sets startTime to now
		if job.Status.StartTime != nil {
			started = job.Status.StartTime.Time
		}
		left := started.Add(time.Duration(*ads) * time.Second).Sub(in.now)
		if left <= 0 {
			return verdict{finish: newCondition(appsv1alpha1.JobFailed, ReasonDeadlineExceeded,
				fmt.Sprintf("job was active longer than activeDeadlineSeconds (%ds)", *ads), in.now)}
		}
		v.requeueAfter = left
	}
	if len(in.tally.active) == 0 && in.inFlight == 0 && in.tally.allFinished(in.desired) {
		return verdict{finish: newCondition(appsv1alpha1.JobComplete, ReasonCompleted,
			fmt.Sprintf("%d pod(s) succeeded, %d failed", in.tally.succeeded, in.tally.failed), in.now)}
	}
	return v
}

// newCondition is a True condition of type t set at now.
func newCondition(t appsv1alpha1.JobConditionType, reason, message string, now time.Time) *appsv1alpha1.JobCondition {
	ts := metav1.NewTime(now).Rfc3339Copy()
	return &appsv1alpha1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: ts, LastTransitionTime: ts}
}
