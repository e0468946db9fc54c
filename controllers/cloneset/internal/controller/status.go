package controller

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Condition reasons this controller sets besides the reference's.
const (
	ReasonPodsToDeleteNotFound = "PodsToDeleteNotFound"
	ReasonScaled               = "Scaled"
	ReasonUpdated              = "Updated"
)

// statusInput is everything calculateStatus looks at.
type statusInput struct {
	cs              *appsv1alpha1.CloneSet
	pods            []*corev1.Pod
	updateRevision  string
	currentRevision string
	collisionCount  int32
	now             time.Time
	scaleErr        error
	updateErr       error
	// scaled: this sync created or deleted pods.
	scaled bool
	// missingPodsToDelete are podsToDelete names with no such pod.
	missingPodsToDelete []string
}

// calculateStatus computes the CloneSet's status (behaviour §1.1
// Status, docs/openkruise-behaviour.md).
// It is pure: the old status is read from in.cs, never modified.
func calculateStatus(in statusInput) appsv1alpha1.CloneSetStatus {
	cs := in.cs
	old := cs.Status
	s := appsv1alpha1.CloneSetStatus{ObservedGeneration: cs.Generation, LabelSelector: workload.StatusSelector(cs.Spec.Selector),
		UpdateRevision: in.updateRevision, CurrentRevision: in.currentRevision, CollisionCount: &in.collisionCount}
	for _, p := range in.pods {
		updated := revisionMatches(p, in.updateRevision)
		ready := podutil.IsWorkloadReady(p)
		available := ready && podutil.IsWorkloadAvailable(p, cs.Spec.MinReadySeconds, in.now)
		s.Replicas++
		s.ReadyReplicas += b2i(ready)
		s.AvailableReplicas += b2i(available)
		s.UpdatedReplicas += b2i(updated)
		s.UpdatedReadyReplicas += b2i(updated && ready)
		s.UpdatedAvailableReplicas += b2i(updated && available)
	}
	replicas := int(ptr.Deref(cs.Spec.Replicas, 1))
	s.ExpectedUpdatedReplicas = int32(replicas - PartitionReplicas(cs.Spec.UpdateStrategy.Partition, replicas))
	if s.UpdatedReplicas == s.Replicas && int(s.Replicas) == replicas {
		s.CurrentRevision = in.updateRevision
	}

	conds := old.Conditions
	conds = setFailure(conds, appsv1alpha1.CloneSetConditionFailedScale, scaleFailure(in), in.scaled, in.now)
	conds = setFailure(conds, appsv1alpha1.CloneSetConditionFailedUpdate, errReason(in.updateErr, "UpdateFailed"), true, in.now)
	conds = setProgressing(conds, in, s, in.now)
	s.Conditions = conds
	return s
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

type failure struct{ reason, message string }

func errReason(err error, reason string) *failure {
	if err == nil {
		return nil
	}
	return &failure{reason: reason, message: err.Error()}
}

func scaleFailure(in statusInput) *failure {
	if f := errReason(in.scaleErr, "ScaleFailed"); f != nil {
		return f
	}
	if len(in.missingPodsToDelete) > 0 {
		return &failure{reason: ReasonPodsToDeleteNotFound, message: fmt.Sprintf(
			"spec.scaleStrategy.podsToDelete: no pod of this CloneSet is named %q; the names were removed", in.missingPodsToDelete)}
	}
	return nil
}

// setFailure sets a FailedScale/FailedUpdate condition to True with f, or,
// when f is nil and the condition exists, back to False. A PodsToDeleteNotFound
// condition is only cleared by a sync that acted (acted), so the user sees it
// although the bad names were trimmed from the spec at once.
func setFailure(conds []appsv1alpha1.CloneSetCondition, t appsv1alpha1.CloneSetConditionType, f *failure, acted bool, now time.Time) []appsv1alpha1.CloneSetCondition {
	cur := findCondition(conds, t)
	if f == nil {
		if cur == nil || cur.Status == corev1.ConditionFalse || (cur.Reason == ReasonPodsToDeleteNotFound && !acted) {
			return conds
		}
		return putCondition(conds, appsv1alpha1.CloneSetCondition{Type: t, Status: corev1.ConditionFalse, Reason: successReason(t)}, now)
	}
	return putCondition(conds, appsv1alpha1.CloneSetCondition{Type: t, Status: corev1.ConditionTrue, Reason: f.reason, Message: f.message}, now)
}

func successReason(t appsv1alpha1.CloneSetConditionType) string {
	if t == appsv1alpha1.CloneSetConditionFailedScale {
		return ReasonScaled
	}
	return ReasonUpdated
}

// setProgressing maintains the Progressing condition: paused, available
// (rollout complete), partition available, or progressing — and
// ProgressDeadlineExceeded when a rollout made no progress for
// progressDeadlineSeconds.
func setProgressing(conds []appsv1alpha1.CloneSetCondition, in statusInput, s appsv1alpha1.CloneSetStatus, now time.Time) []appsv1alpha1.CloneSetCondition {
	cs := in.cs
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	next := appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: corev1.ConditionTrue}
	switch {
	case cs.Spec.UpdateStrategy.Paused:
		next.Status, next.Reason, next.Message = corev1.ConditionUnknown, appsv1alpha1.CloneSetProgressPaused, "CloneSet is paused"
	case s.UpdatedAvailableReplicas == replicas && s.AvailableReplicas == replicas && s.Replicas == replicas:
		next.Reason, next.Message = appsv1alpha1.CloneSetProgressAvailable, "CloneSet is available"
	case s.ExpectedUpdatedReplicas < replicas && s.UpdatedAvailableReplicas >= s.ExpectedUpdatedReplicas && s.AvailableReplicas == replicas:
		next.Reason, next.Message = appsv1alpha1.CloneSetProgressPartitionAvailable, "CloneSet has been paused due to partition ready"
	default:
		next.Reason, next.Message = appsv1alpha1.CloneSetProgressUpdated, "CloneSet is progressing"
	}
	cur := findCondition(conds, next.Type)
	if next.Reason == appsv1alpha1.CloneSetProgressUpdated && cur != nil {
		deadline := cs.Spec.ProgressDeadlineSeconds
		progressed := s.UpdatedAvailableReplicas != cs.Status.UpdatedAvailableReplicas || s.AvailableReplicas != cs.Status.AvailableReplicas ||
			s.UpdatedReplicas != cs.Status.UpdatedReplicas || cur.Reason != next.Reason && cur.Reason != appsv1alpha1.CloneSetProgressDeadlineExceeded
		switch {
		case progressed:
			next.LastUpdateTime = metav1.NewTime(now)
		case cur.Reason == appsv1alpha1.CloneSetProgressDeadlineExceeded:
			return conds
		case deadline != nil && *deadline != math.MaxInt32 && now.Sub(cur.LastUpdateTime.Time) > time.Duration(*deadline)*time.Second:
			next.Status, next.Reason = corev1.ConditionFalse, appsv1alpha1.CloneSetProgressDeadlineExceeded
			next.Message = fmt.Sprintf("CloneSet has not made progress for %d seconds", *deadline)
		default:
			return conds // still progressing, nothing new
		}
	}
	return putCondition(conds, next, now)
}

func findCondition(conds []appsv1alpha1.CloneSetCondition, t appsv1alpha1.CloneSetConditionType) *appsv1alpha1.CloneSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// putCondition returns a copy of conds with c set: unchanged status, reason
// and message keep the old times; a status change stamps lastTransitionTime.
func putCondition(conds []appsv1alpha1.CloneSetCondition, c appsv1alpha1.CloneSetCondition, now time.Time) []appsv1alpha1.CloneSetCondition {
	out := make([]appsv1alpha1.CloneSetCondition, 0, len(conds)+1)
	found := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		found = true
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && c.LastUpdateTime.IsZero() {
			out = append(out, old)
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = metav1.NewTime(now)
		}
		out = append(out, c)
	}
	if !found {
		c.LastTransitionTime = metav1.NewTime(now)
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = metav1.NewTime(now)
		}
		out = append(out, c)
	}
	return out
}

// updateStatus computes the status and writes it only if it changed.
// The written object replaces st.cs, so later writes of this sync carry its
// resourceVersion, and the next sync waits until the cache shows it.
func (c *Controller) updateStatus(ctx context.Context, st *syncState, scaled bool, scaleErr, updateErr error) error {
	all := st.all
	status := calculateStatus(statusInput{
		cs:                  st.cs,
		pods:                st.pods,
		updateRevision:      st.Update.Name,
		currentRevision:     st.Current.Name,
		collisionCount:      st.CollisionCount,
		now:                 st.now,
		scaleErr:            scaleErr,
		updateErr:           updateErr,
		scaled:              scaled,
		missingPodsToDelete: st.missingPodsToDelete(all),
	})
	if d := minReadyRequeue(st); d > 0 {
		st.requeue.After(d)
	}
	if d := st.cs.Spec.ProgressDeadlineSeconds; d != nil && *d != math.MaxInt32 && status.UpdatedAvailableReplicas != ptr.Deref(st.cs.Spec.Replicas, 1) {
		st.requeue.After(time.Duration(*d) * time.Second)
	}
	out, err := workload.WriteStatus(ctx, c.Base, workload.StatusWrite[appsv1alpha1.CloneSetStatus]{
		Key: st.key, Now: st.now, Cur: st.cs.Status, Next: status, CountersOnly: countersOnly, Requeue: &st.requeue,
	}, workload.StatusUpdate(c.client.AppsV1alpha1().CloneSets(st.cs.Namespace), st.cs,
		func(cs *appsv1alpha1.CloneSet, s appsv1alpha1.CloneSetStatus) { cs.Status = s }))
	if out != nil {
		st.cs = out
	}
	return err
}

// minReadyRequeue is when the next ready pod becomes available by
// minReadySeconds, so status and maxUnavailable see it without an event.
func minReadyRequeue(st *syncState) time.Duration {
	mrs := st.cs.Spec.MinReadySeconds
	if mrs <= 0 {
		return 0
	}
	var next time.Duration
	for _, p := range st.pods {
		since, ok := podutil.ReadySince(p)
		if !ok {
			continue
		}
		if d := since.Add(time.Duration(mrs)*time.Second).Sub(st.now) + 100*time.Millisecond; d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}
