package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Condition types this controller sets on a DaemonSet.
const (
	// ConditionInvalidSpec: the spec passed admission but cannot be acted on
	// (e.g. a rollingUpdate.selector the API server cannot parse, a template
	// the API server rejects as a pod).
	ConditionInvalidSpec appsv1.DaemonSetConditionType = "InvalidSpec"
)

// statusInput is everything calculateStatus looks at.
type statusInput struct {
	ds              *appsv1alpha1.DaemonSet
	nodes           []*nodeState
	hash            string
	generation      *string
	collisionCount  int32
	minReadySeconds int32
	now             time.Time
	// observed: this sync acted on the current generation (it did not stop
	// early on unsatisfied expectations), so observedGeneration may move.
	observed bool
	// invalid is why the spec cannot be acted on ("" if it can).
	invalid, invalidReason string
}

// calculateStatus computes the DaemonSet's status as upstream does: per node
// that should run the daemon, desired; with a pod, current; its oldest pod
// ready, then available (a Ready PreparingDelete pod
// counts, as in OpenKruise); at the update revision, updated. A node that should
// not run the daemon but has a pod is misscheduled. unavailable = desired −
// available. daemonSetHash is the update revision's hash. Pure: the old
// status is read from in.ds, never modified.
func calculateStatus(in statusInput) appsv1alpha1.DaemonSetStatus {
	old := in.ds.Status
	s := appsv1alpha1.DaemonSetStatus{
		ObservedGeneration: old.ObservedGeneration,
		CollisionCount:     ptr.To(in.collisionCount),
		DaemonSetHash:      in.hash,
	}
	if in.observed {
		s.ObservedGeneration = in.ds.Generation
	}
	if old.CollisionCount == nil && in.collisionCount == 0 {
		s.CollisionCount = nil
	}
	for _, st := range in.nodes {
		scheduled := len(st.pods) > 0
		if !st.exists || !st.verdict.ShouldRun {
			if st.exists && scheduled {
				s.NumberMisscheduled++
			}
			continue
		}
		s.DesiredNumberScheduled++
		if !scheduled {
			continue
		}
		s.CurrentNumberScheduled++
		pod := st.pods[0]
		if podutil.IsReady(pod) {
			s.NumberReady++
			// Available as OpenKruise counts numberAvailable: ready for
			// minReadySeconds and no InPlaceUpdateReady condition holding the
			// pod back (an in-place update in progress makes it unavailable
			// before the kubelet notices). A PreparingDelete pod still counts
			// while Ready: it still serves (markPodNotReady takes it out).
			if podutil.IsAvailable(pod, in.minReadySeconds, in.now) && podutil.IsInPlaceUpdateReady(pod) {
				s.NumberAvailable++
			}
		}
		if isUpdated(pod, in.hash, in.generation) {
			s.UpdatedNumberScheduled++
		}
	}
	s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
	s.Conditions = setCondition(old.Conditions, ConditionInvalidSpec, in.invalid, in.invalidReason, in.now)
	return s
}

// setCondition sets condition t True with message when message is not
// empty, and False when it is and the condition exists; it adds nothing to
// a DaemonSet that never had the problem. The input is not modified.
func setCondition(conds []appsv1.DaemonSetCondition, t appsv1.DaemonSetConditionType, message, reason string, now time.Time) []appsv1.DaemonSetCondition {
	status, idx := corev1.ConditionFalse, -1
	if message != "" {
		status = corev1.ConditionTrue
	}
	for i := range conds {
		if conds[i].Type == t {
			idx = i
		}
	}
	if idx < 0 && status == corev1.ConditionFalse {
		return conds
	}
	out := append([]appsv1.DaemonSetCondition(nil), conds...)
	if idx >= 0 && out[idx].Status == status && out[idx].Message == message {
		return out
	}
	if status == corev1.ConditionFalse {
		reason, message = "Valid", ""
	}
	c := appsv1.DaemonSetCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)}
	if idx >= 0 {
		if out[idx].Status == status {
			c.LastTransitionTime = out[idx].LastTransitionTime
		}
		out[idx] = c
		return out
	}
	return append(out, c)
}

// updateStatus writes the computed status when it differs from the
// cached one, and asks for a requeue when a pod becomes available later.
func (c *Controller) updateStatus(ctx context.Context, st *syncState) error {
	s := calculateStatus(statusInput{
		ds: st.ds, nodes: st.nodes, hash: st.hash, generation: st.generation, collisionCount: st.CollisionCount,
		minReadySeconds: st.ds.Spec.MinReadySeconds, now: st.now, observed: st.observed,
		invalid: st.invalid, invalidReason: st.invalidReason,
	})
	if s.NumberReady != s.NumberAvailable && st.ds.Spec.MinReadySeconds > 0 {
		for _, n := range st.nodes {
			for _, p := range n.pods {
				if since, ready := podutil.ReadySince(p); ready && !since.IsZero() {
					st.requeue.After(since.Add(time.Duration(st.ds.Spec.MinReadySeconds)*time.Second + time.Second).Sub(st.now))
				}
			}
		}
	}
	_, err := workload.WriteStatus(ctx, c.Base, workload.StatusWrite[appsv1alpha1.DaemonSetStatus]{
		Key: st.key, Now: st.now, Cur: st.ds.Status, Next: s, CountersOnly: countersOnly, Requeue: &st.requeue,
	}, workload.StatusUpdate(c.client.AppsV1alpha1().DaemonSets(st.ds.Namespace), st.ds,
		func(ds *appsv1alpha1.DaemonSet, s appsv1alpha1.DaemonSetStatus) { ds.Status = s }))
	return err
}

// statusInterval spaces the status writes of a DaemonSet whose only news is
// its pod counters: while pods land on a thousand nodes the counters change
// at every sync, and kube-controller-manager wrote its status about half as
// often in the bench (bench/RESULTS.md). Anything else — observedGeneration,
// daemonSetHash, collisionCount, conditions — is written at once.
const statusInterval = time.Second

// countersOnly reports whether next differs from cur only in the pod
// counters.
func countersOnly(cur, next appsv1alpha1.DaemonSetStatus) bool {
	strip := func(s appsv1alpha1.DaemonSetStatus) appsv1alpha1.DaemonSetStatus {
		s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled = 0, 0, 0
		s.NumberReady, s.NumberAvailable, s.NumberUnavailable, s.UpdatedNumberScheduled = 0, 0, 0, 0
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(cur), strip(next))
}
