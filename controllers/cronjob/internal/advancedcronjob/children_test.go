package advancedcronjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestOutcomes(t *testing.T) {
	cond := func(tp batchv1.JobConditionType, s corev1.ConditionStatus) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: tp, Status: s}}}}
	}
	assert.Equal(t, running, jobOutcome(&batchv1.Job{}))
	assert.Equal(t, succeeded, jobOutcome(cond(batchv1.JobComplete, corev1.ConditionTrue)))
	assert.Equal(t, failed, jobOutcome(cond(batchv1.JobFailed, corev1.ConditionTrue)))
	assert.Equal(t, running, jobOutcome(cond(batchv1.JobFailed, corev1.ConditionFalse)))
	assert.Equal(t, running, jobOutcome(cond(batchv1.JobFailureTarget, corev1.ConditionTrue)), "not terminal yet")
	assert.Equal(t, running, jobOutcome(cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)), "not terminal yet")

	bcj := func(st appsv1alpha1.BroadcastJobStatus) *appsv1alpha1.BroadcastJob {
		return &appsv1alpha1.BroadcastJob{Status: st}
	}
	assert.Equal(t, running, broadcastJobOutcome(bcj(appsv1alpha1.BroadcastJobStatus{Phase: appsv1alpha1.PhaseRunning})))
	assert.Equal(t, succeeded, broadcastJobOutcome(bcj(appsv1alpha1.BroadcastJobStatus{Phase: appsv1alpha1.PhaseCompleted})))
	assert.Equal(t, failed, broadcastJobOutcome(bcj(appsv1alpha1.BroadcastJobStatus{Phase: appsv1alpha1.PhaseFailed})))
	assert.Equal(t, succeeded, broadcastJobOutcome(bcj(appsv1alpha1.BroadcastJobStatus{
		Conditions: []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobComplete, Status: corev1.ConditionTrue}}})))
	assert.Equal(t, failed, broadcastJobOutcome(bcj(appsv1alpha1.BroadcastJobStatus{
		Conditions: []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobFailed, Status: corev1.ConditionTrue}}})))
}

func TestBeyondHistory(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 10, m, 0, 0, time.UTC) }
	c := func(name string, m int, o outcome) child { return child{Name: name, ScheduledAt: at(m), Outcome: o} }
	names := func(cs []child) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	all := []child{c("s1", 1, succeeded), c("f2", 2, failed), c("s3", 3, succeeded), c("f4", 4, failed), c("s5", 5, succeeded), c("r6", 6, running)}
	cases := []struct {
		name       string
		cs         []child
		okL, failL int32
		want       []string
	}{
		{"within limits", all, 3, 2, nil},
		{"oldest successes first", all, 1, 2, []string{"s1", "s3"}},
		{"oldest failures first", all, 3, 1, []string{"f2"}},
		{"zero keeps none", all, 0, 0, []string{"s1", "s3", "s5", "f2", "f4"}},
		{"running children never count", []child{c("r1", 1, running), c("r2", 2, running)}, 0, 0, nil},
		{"children being deleted neither count nor go twice",
			[]child{{Name: "s1", ScheduledAt: at(1), Outcome: succeeded, Deleting: true}, c("s2", 2, succeeded), c("s3", 3, succeeded)}, 1, 1,
			[]string{"s2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, names(beyondHistory(tc.cs, tc.okL, tc.failL))) })
	}
}

func TestCalculateStatus(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 10, m, 0, 0, time.UTC) }
	acj := newACJ("2026-03-01T10:00:10Z")
	cs := []child{
		{Kind: appsv1alpha1.JobTemplate, Name: "a", UID: "ua", ScheduledAt: at(1), Outcome: succeeded},
		{Kind: appsv1alpha1.JobTemplate, Name: "b", UID: "ub", ScheduledAt: at(2), Outcome: running},
		{Kind: appsv1alpha1.JobTemplate, Name: "c", UID: "uc", ScheduledAt: at(3), Outcome: running, Deleting: true},
	}
	st := calculateStatus(acj, cs, time.Time{}, nil, at(9))
	assert.Equal(t, appsv1alpha1.JobTemplate, st.Type)
	assert.Equal(t, []corev1.ObjectReference{{Kind: "Job", APIVersion: "batch/v1", Namespace: testNS, Name: "b", UID: "ub"}}, st.Active)
	assert.Equal(t, at(3), st.LastScheduleTime.Time, "a child being deleted still ran")

	// The maximum of every source wins: status, children, and what this process remembers creating.
	acj.Status.LastScheduleTime = ptr.To(metav1.NewTime(at(5)))
	assert.Equal(t, at(5), calculateStatus(acj, cs, at(4), nil, at(9)).LastScheduleTime.Time)
	assert.Equal(t, at(7), calculateStatus(acj, cs, at(7), nil, at(9)).LastScheduleTime.Time)
	assert.True(t, statusEqual(calculateStatus(acj, cs, at(7), nil, at(9)), calculateStatus(acj, cs, at(7), nil, at(9))))
	assert.False(t, statusEqual(calculateStatus(acj, cs, at(7), nil, at(9)), calculateStatus(acj, cs[:1], at(7), nil, at(9))))
}
