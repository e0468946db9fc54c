package inplace

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// ReasonStartInPlaceUpdate is the reason of InPlaceUpdateReady=False.
const ReasonStartInPlaceUpdate = "StartInPlaceUpdate"

// HasReadinessGate reports whether the pod lists the InPlaceUpdateReady
// readiness gate (CloneSet injects it into every pod it creates). Only such
// pods get the condition.
func HasReadinessGate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == pub.InPlaceUpdateReady
	})
}

// Condition returns the pod's InPlaceUpdateReady condition, or nil.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == pub.InPlaceUpdateReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// StartConditions returns the pod's conditions with InPlaceUpdateReady set
// to False, reason StartInPlaceUpdate — written before the containers are
// changed, so the pod leaves endpoints first. changed is false (and the
// pod's own slice is returned) when an equal condition (status, reason,
// message) is already there. Recomputing Ready from the readiness gates is
// the caller's job.
func StartConditions(pod *corev1.Pod, now time.Time) (conditions []corev1.PodCondition, changed bool) {
	return withCondition(pod.Status.Conditions, corev1.PodCondition{
		Type:               pub.InPlaceUpdateReady,
		Status:             corev1.ConditionFalse,
		Reason:             ReasonStartInPlaceUpdate,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// CompletedConditions returns the pod's conditions with InPlaceUpdateReady
// set to True (written once UpdateCompleted holds); changed as for
// StartConditions.
func CompletedConditions(pod *corev1.Pod, now time.Time) (conditions []corev1.PodCondition, changed bool) {
	return withCondition(pod.Status.Conditions, corev1.PodCondition{
		Type:               pub.InPlaceUpdateReady,
		Status:             corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// withCondition returns a new slice with c replacing the condition of its
// type (or appended); conds is never modified.
func withCondition(conds []corev1.PodCondition, c corev1.PodCondition) ([]corev1.PodCondition, bool) {
	i := slices.IndexFunc(conds, func(old corev1.PodCondition) bool { return old.Type == c.Type })
	if i >= 0 && conds[i].Status == c.Status && conds[i].Reason == c.Reason && conds[i].Message == c.Message {
		return conds, false
	}
	out := make([]corev1.PodCondition, len(conds), len(conds)+1)
	copy(out, conds) // PodCondition holds no pointers
	if i >= 0 {
		if conds[i].Status == c.Status {
			c.LastTransitionTime = conds[i].LastTransitionTime // only reason/message changed
		}
		out[i] = c
	} else {
		out = append(out, c)
	}
	return out, true
}
