package spread

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// RescheduleSeconds is ws's rescheduleCriticalSeconds when the Adaptive
// strategy reschedules (0: it does not).
func RescheduleSeconds(ws *appsv1alpha1.WorkloadSpread) int32 {
	st := ws.Spec.ScheduleStrategy
	if st.Type != appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType || st.Adaptive == nil || st.Adaptive.RescheduleCriticalSeconds == nil {
		return 0
	}
	return *st.Adaptive.RescheduleCriticalSeconds
}

// Unscheduled returns the pods the scheduler has not placed for longer
// than critical (PodScheduled False, reason Unschedulable, counted from
// the pod's creation), and how long until the next one would be (0: none
// pending).
func Unscheduled(pods []*corev1.Pod, critical time.Duration, now time.Time) ([]*corev1.Pod, time.Duration) {
	var out []*corev1.Pod
	var next time.Duration
	for _, p := range pods {
		if p.Spec.NodeName != "" || !podutil.IsActive(p) {
			continue
		}
		c := podutil.GetCondition(p, corev1.PodScheduled)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		due := p.CreationTimestamp.Add(critical)
		if !due.After(now) {
			out = append(out, p)
		} else if d := due.Sub(now); next == 0 || d < next {
			next = d
		}
	}
	return out, next
}

// Schedulability sets st's Schedulable condition as OpenKruise does:
// False (PodUnschedulable) while some pod of the subset is stuck; back to
// True (Sufficient) MaxScheduledFailedDuration after it turned False. It
// returns how long until that recovery (0: none due) and whether the
// subset recovered now (a Normal event).
func Schedulability(st *appsv1alpha1.WorkloadSpreadSubsetStatus, stuck bool, now time.Time) (time.Duration, bool) {
	old := SubsetCondition(st, appsv1alpha1.SubsetSchedulable)
	switch {
	case stuck:
		setCondition(st, corev1.ConditionFalse, "PodUnschedulable", now)
	case old == nil:
		setCondition(st, corev1.ConditionTrue, "Sufficient", now)
	case old.Status == corev1.ConditionFalse:
		due := old.LastTransitionTime.Add(MaxScheduledFailedDuration)
		if due.After(now) {
			return due.Sub(now), false
		}
		setCondition(st, corev1.ConditionTrue, "Sufficient", now)
		return 0, true
	}
	return 0, false
}

// RemoveSchedulable drops the Schedulable condition (no rescheduling).
func RemoveSchedulable(st *appsv1alpha1.WorkloadSpreadSubsetStatus) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != appsv1alpha1.SubsetSchedulable {
			out = append(out, c)
		}
	}
	st.Conditions = out
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
}

func setCondition(st *appsv1alpha1.WorkloadSpreadSubsetStatus, status corev1.ConditionStatus, reason string, now time.Time) {
	if c := SubsetCondition(st, appsv1alpha1.SubsetSchedulable); c != nil {
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason = status, reason
		return
	}
	st.Conditions = append(st.Conditions, appsv1alpha1.WorkloadSpreadSubsetCondition{Type: appsv1alpha1.SubsetSchedulable,
		Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now)})
}
