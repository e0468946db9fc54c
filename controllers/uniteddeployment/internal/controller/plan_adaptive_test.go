package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func pendingPod(created time.Time, unschedulable bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if unschedulable {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	return p
}

func TestSchedulability(t *testing.T) {
	now := time.Unix(10000, 0)
	strategy := appsv1alpha1.UnitedDeploymentScheduleStrategy{Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{RescheduleCriticalSeconds: ptr.To[int32](10), UnschedulableDuration: ptr.To[int32](60)}}
	notReady := Observed{Replicas: 2, ReadyReplicas: 1}
	falseSince := func(ago time.Duration) []appsv1alpha1.UnitedDeploymentSubsetCondition {
		return []appsv1alpha1.UnitedDeploymentSubsetCondition{{Type: appsv1alpha1.UnitedDeploymentSubsetSchedulable, Status: corev1.ConditionFalse,
			Reason: "reschedule", Message: "timeout pending pods found", LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
	cases := []struct {
		name          string
		prev          []appsv1alpha1.UnitedDeploymentSubsetCondition
		o             Observed
		pods          []*corev1.Pod
		unschedulable bool
		status        corev1.ConditionStatus // "" no condition
		reason        string
		requeue       time.Duration
	}{
		{name: "all ready", o: Observed{Replicas: 2, ReadyReplicas: 2}, pods: []*corev1.Pod{pendingPod(now.Add(-time.Hour), true)}},
		{name: "unscheduled pod, not yet critical", o: notReady, pods: []*corev1.Pod{pendingPod(now.Add(-4*time.Second), true)},
			requeue: 6 * time.Second},
		{name: "unscheduled pod past critical", o: notReady, pods: []*corev1.Pod{pendingPod(now.Add(-11*time.Second), true)},
			unschedulable: true, status: corev1.ConditionFalse, reason: "reschedule", requeue: 60 * time.Second},
		{name: "pending but not refused by the scheduler", o: notReady, pods: []*corev1.Pod{pendingPod(now.Add(-time.Hour), false)}},
		{name: "still within unschedulableDuration", prev: falseSince(20 * time.Second), o: Observed{Replicas: 1, ReadyReplicas: 1},
			unschedulable: true, status: corev1.ConditionFalse, reason: "reschedule", requeue: 40 * time.Second},
		{name: "recovered after unschedulableDuration", prev: falseSince(61 * time.Second), o: Observed{Replicas: 1, ReadyReplicas: 1},
			status: corev1.ConditionTrue, reason: "recover"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unschedulable, conds, requeue := Schedulability(strategy, c.prev, c.o, c.pods, now)
			assert.Equal(t, c.unschedulable, unschedulable)
			assert.Equal(t, c.requeue, requeue)
			cond := subsetCondition(conds, appsv1alpha1.UnitedDeploymentSubsetSchedulable)
			if c.status == "" {
				assert.Nil(t, cond)
				return
			}
			if assert.NotNil(t, cond) {
				assert.Equal(t, c.status, cond.Status)
				assert.Equal(t, c.reason, cond.Reason)
			}
		})
	}
	prev := falseSince(20 * time.Second)
	_, conds, _ := Schedulability(strategy, prev, notReady, []*corev1.Pod{pendingPod(now.Add(-time.Minute), true)}, now)
	assert.Equal(t, prev[0].LastTransitionTime, conds[0].LastTransitionTime, "same status and reason: the condition is kept")
	assert.Equal(t, now.Add(-20*time.Second), prev[0].LastTransitionTime.Time, "prev is not modified")
}
