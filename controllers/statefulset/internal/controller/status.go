package controller

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// statusInput is everything calculateStatus looks at.
type statusInput struct {
	set             *appsv1beta1.StatefulSet
	pods            []*corev1.Pod
	updateRevision  string
	currentRevision string
	collisionCount  int32
	minReadySeconds int32
	now             time.Time
	scaleErr        error
	updateErr       error
}

// calculateStatus computes the set's status (behaviour §1.2 Status,
// docs/openkruise-behaviour.md). Pods
// count when created; Ready and available when Running and Ready with no
// in-place update under way (and Ready for minReadySeconds); current and updated when not terminating and labelled
// with that revision. Under RollingUpdate the current revision becomes the
// update revision once every counted pod is updated and ready. Pure: the old
// status is read from in.set, never modified.
func calculateStatus(in statusInput) appsv1beta1.StatefulSetStatus {
	set := in.set
	s := appsv1beta1.StatefulSetStatus{ObservedGeneration: set.Generation, LabelSelector: workload.StatusSelector(set.Spec.Selector),
		UpdateRevision: in.updateRevision, CurrentRevision: in.currentRevision, CollisionCount: &in.collisionCount}
	for _, p := range in.pods {
		s.Replicas++
		// A pod whose in-place update has begun (InPlaceUpdateReady False) is not ready even while its Ready
		// condition still says True (the kubelet recomputes it a moment later): counted ready, it would be counted
		// updated-ready, and the rollout finished, before its containers restarted. CloneSet counts the same way.
		ready := podutil.IsWorkloadReady(p) && p.DeletionTimestamp == nil
		available := ready && podutil.IsAvailable(p, in.minReadySeconds, in.now)
		s.ReadyReplicas += b2i(ready)
		s.AvailableReplicas += b2i(available)
		if p.DeletionTimestamp != nil {
			continue
		}
		rev := p.Labels[pub.ControllerRevisionHashLabelKey]
		s.CurrentReplicas += b2i(rev == in.currentRevision)
		if rev == in.updateRevision {
			s.UpdatedReplicas++
			s.UpdatedReadyReplicas += b2i(ready)
			s.UpdatedAvailableReplicas += b2i(available)
		}
	}
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType &&
		s.UpdatedReplicas == s.Replicas && s.ReadyReplicas == s.Replicas {
		s.CurrentRevision = in.updateRevision
		s.CurrentReplicas = s.UpdatedReplicas
	}
	conds := set.Status.Conditions
	conds = setFailure(conds, appsv1beta1.FailedCreatePod, in.scaleErr, in.now)
	conds = setFailure(conds, appsv1beta1.FailedUpdatePod, in.updateErr, in.now)
	s.Conditions = conds
	return s
}

// setFailure sets condition t True with the error's message after a failed
// step, and False once the step succeeds again; it adds nothing for a set
// that never failed.
func setFailure(conds []appsv1.StatefulSetCondition, t appsv1.StatefulSetConditionType, err error, now time.Time) []appsv1.StatefulSetCondition {
	c := appsv1.StatefulSetCondition{Type: t, Status: corev1.ConditionFalse, Reason: "Succeeded"}
	if err != nil {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, string(t), err.Error()
		switch {
		case errors.Is(err, errInPlaceOnly):
			c.Reason = "InPlaceOnly"
		case errors.Is(err, errInvalidSpec):
			c.Reason = "InvalidSpec"
		}
	}
	out := make([]appsv1.StatefulSetCondition, 0, len(conds)+1)
	found := false
	for _, old := range conds {
		if old.Type != t {
			out = append(out, old)
			continue
		}
		found = true
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			out = append(out, old)
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		out = append(out, c)
	}
	if !found && err != nil {
		c.LastTransitionTime = metav1.NewTime(now)
		out = append(out, c)
	}
	return out
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// updateStatus writes the computed status when it differs from the cached
// one, and asks for a requeue for when a Ready pod becomes available.
func (c *Controller) updateStatus(ctx context.Context, st *syncState, scaleErr, updateErr error) error {
	s := calculateStatus(statusInput{
		set:             st.set,
		pods:            podsOf(st.pods),
		updateRevision:  st.Update.Name,
		currentRevision: st.Current.Name,
		collisionCount:  st.CollisionCount,
		minReadySeconds: st.minReadySeconds,
		now:             st.now,
		scaleErr:        scaleErr,
		updateErr:       updateErr,
	})
	for _, p := range st.pods {
		st.requeue.After(availableIn(p, st.minReadySeconds, st.now)) // status changes then
	}
	_, err := workload.WriteStatus(ctx, c.Base, workload.StatusWrite[appsv1beta1.StatefulSetStatus]{Key: st.key, Now: st.now, Cur: st.set.Status, Next: s},
		workload.StatusUpdate(c.client.AppsV1beta1().StatefulSets(st.set.Namespace), st.set,
			func(set *appsv1beta1.StatefulSet, s appsv1beta1.StatefulSetStatus) { set.Status = s }))
	return err
}

func podsOf(m map[int]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	return out
}
