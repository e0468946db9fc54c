package broadcastjob

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// nodeOutcome is what the pods the job ran on one node add up to.
type nodeOutcome int

const (
	nodeNone      nodeOutcome = iota // no pod yet
	nodeActive                       // a pod is pending or running
	nodeRetry                        // the last pod failed, retries are left, nothing runs
	nodeSucceeded                    // a pod succeeded
	nodeFailed                       // the node used up its restartLimit
)

// nodeTally groups the job's pods by the node they target and counts what the status reports. Counters are per
// node, not per pod: a node whose first pod failed and whose retry succeeded counts once, as succeeded.
type nodeTally struct {
	outcome map[string]nodeOutcome
	// active are the non-terminal pods of nodes that have not failed (terminating ones included: they still hold
	// the node and a parallelism slot). len(active) is status.active.
	active []*corev1.Pod
	// overLimit are running pods (restartPolicy OnFailure) whose in-place restarts used up the node's
	// restartLimit: the node counts as failed and the pod is stopped.
	overLimit         []*corev1.Pod
	succeeded, failed int32
}

// tallyPods works out each node's outcome. restartLimit is the number of retries a node gets: a retry is a new pod
// after a failed one, or (restartPolicy OnFailure) a container restart the kubelet made in place. A node whose
// failures exceed restartLimit has failed; restartLimit 0 means the first failure is final.
func tallyPods(pods []*corev1.Pod, restartLimit int32) nodeTally {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		n := targetNode(p)
		byNode[n] = append(byNode[n], p)
	}
	t := nodeTally{outcome: make(map[string]nodeOutcome, len(byNode))}
	for node, nodePods := range byNode {
		var failures int32
		var active []*corev1.Pod
		succeeded := false
		for _, p := range nodePods {
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				succeeded = true
			case corev1.PodFailed:
				failures++
			default:
				failures += containerRestarts(p)
				active = append(active, p)
			}
		}
		switch {
		case succeeded:
			t.outcome[node] = nodeSucceeded
			t.succeeded++
			t.active = append(t.active, active...) // a stray duplicate still runs; report it
		case failures > restartLimit:
			t.outcome[node] = nodeFailed
			t.failed++
			t.overLimit = append(t.overLimit, active...)
		case len(active) > 0:
			t.outcome[node] = nodeActive
			t.active = append(t.active, active...)
		case failures > 0:
			t.outcome[node] = nodeRetry
		}
	}
	return t
}

// allFinished reports whether every node in nodes has succeeded or failed.
func (t nodeTally) allFinished(nodes []string) bool {
	for _, n := range nodes {
		if o := t.outcome[n]; o != nodeSucceeded && o != nodeFailed {
			return false
		}
	}
	return true
}

// planInput is everything the pod plan depends on.
type planInput struct {
	eligible    []string         // eligible node names, in creation order
	tally       nodeTally        // from tallyPods
	inFlight    sets.Set[string] // nodes with a pod created but not yet in the cache
	parallelism int              // resolved cap on active pods
	canCreate   bool             // not paused, not finished, spec valid
	finished    bool             // the job is over: every active pod goes
}

// podPlan is what to do to pods in this sync.
type podPlan struct {
	create []string      // nodes that get a new pod
	delete []*corev1.Pod // pods to delete
	stop   []*corev1.Pod // running pods to stop in place (activeDeadlineSeconds), keeping them as a record
}

// planPods decides creates and deletes. Creates go to eligible nodes without a pod or due a retry, in order, as
// long as active pods (plus in-flight creates) stay within parallelism. Deletes: every active pod once the job is
// finished; otherwise only pods the scheduler has not bound whose node is no longer eligible (they would stay
// Pending forever). Bound pods on a node that became ineligible run to completion.
func planPods(in planInput) podPlan {
	var p podPlan
	eligible := sets.New(in.eligible...)
	for _, pod := range append(append([]*corev1.Pod(nil), in.tally.active...), in.tally.overLimit...) {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if in.finished || (pod.Spec.NodeName == "" && !eligible.Has(targetNode(pod))) {
			p.delete = append(p.delete, pod)
		}
	}
	if !in.finished {
		for _, pod := range in.tally.overLimit {
			if pod.DeletionTimestamp == nil && (pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds > stopDeadlineSeconds) {
				p.stop = append(p.stop, pod)
			}
		}
	}
	if !in.canCreate || in.finished {
		return p
	}
	budget := in.parallelism - len(in.tally.active) - in.inFlight.Len()
	for _, node := range in.eligible {
		if budget <= 0 {
			break
		}
		if in.inFlight.Has(node) {
			continue
		}
		if o := in.tally.outcome[node]; o == nodeNone || o == nodeRetry {
			p.create = append(p.create, node)
			budget--
		}
	}
	return p
}

// stopDeadlineSeconds is the activeDeadlineSeconds given to a pod that used up its node's restartLimit in place:
// the kubelet then kills it and marks it Failed, and the Failed pod stays as the node's record.
const stopDeadlineSeconds = 1

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
	pause        bool                       // failurePolicy Pause saw a new failure: set spec.paused
	deleteJob    bool                       // ttlSecondsAfterFinished has passed
	requeueAfter time.Duration              // when time alone changes the verdict (deadline, TTL); 0 = never
}

// judgeInput is what the verdict depends on.
type judgeInput struct {
	job      *appsv1alpha1.BroadcastJob
	tally    nodeTally
	eligible []string
	inFlight int
	invalid  string // why the spec cannot run, "" if it can
	now      time.Time
}

// judge decides, in order: TTL of a finished job; runtime-invalid spec; FailFast on a failed node; the active
// deadline and completion (completionPolicy Always only); Pause on a failure not seen before (more failed nodes
// than the last status reported, so unpausing does not re-pause on an old failure).
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
	if job.Spec.FailurePolicy.Type == appsv1alpha1.FailurePolicyTypeFailFast && in.tally.failed > 0 {
		return verdict{finish: newCondition(appsv1alpha1.JobFailed, ReasonFailFast,
			fmt.Sprintf("failurePolicy is FailFast and %d node(s) failed", in.tally.failed), in.now)}
	}
	var v verdict
	if always {
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
		if len(in.tally.active) == 0 && in.inFlight == 0 && in.tally.allFinished(in.eligible) {
			return verdict{finish: newCondition(appsv1alpha1.JobComplete, ReasonCompleted,
				fmt.Sprintf("%d node(s) succeeded, %d failed", in.tally.succeeded, in.tally.failed), in.now)}
		}
	}
	if job.Spec.FailurePolicy.Type == appsv1alpha1.FailurePolicyTypePause && !job.Spec.Paused && in.tally.failed > job.Status.Failed {
		v.pause = true
	}
	return v
}

// newCondition is a True condition of type t set at now.
func newCondition(t appsv1alpha1.JobConditionType, reason, message string, now time.Time) *appsv1alpha1.JobCondition {
	ts := metav1.NewTime(now).Rfc3339Copy()
	return &appsv1alpha1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: ts, LastTransitionTime: ts}
}
