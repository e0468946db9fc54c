package broadcastjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 500, time.UTC)
	sec := metav1.NewTime(now.Truncate(time.Second))
	job := &appsv1alpha1.BroadcastJob{}
	tally := tallyPods([]*corev1.Pod{jobPod("a", "n1", corev1.PodRunning, true), jobPod("b", "n2", corev1.PodSucceeded, true), jobPod("c", "n3", corev1.PodFailed, true)}, 0)

	s := computeStatus(job, tally, 4, nil, false, now)
	assert.Equal(t, appsv1alpha1.BroadcastJobStatus{Active: 1, Succeeded: 1, Failed: 1, Desired: 4, StartTime: &sec, Phase: appsv1alpha1.PhaseRunning}, s)
	assert.Nil(t, job.Status.StartTime, "job not mutated")

	job.Status = s
	later := now.Add(time.Minute)
	s2 := computeStatus(job, tally, 4, nil, true, later)
	assert.Equal(t, &sec, s2.StartTime, "start time kept")
	assert.Equal(t, appsv1alpha1.PhasePaused, s2.Phase)

	done := computeStatus(job, tally, 4, newCondition(appsv1alpha1.JobFailed, ReasonFailFast, "m", later), true, later)
	require.Len(t, done.Conditions, 1)
	assert.Equal(t, appsv1alpha1.PhaseFailed, done.Phase, "finished wins over paused")
	assert.Equal(t, later.Truncate(time.Second), done.CompletionTime.Time)
	assert.Empty(t, job.Status.Conditions, "job not mutated")

	job.Status = done
	again := computeStatus(job, tally, 4, nil, false, later.Add(time.Hour))
	assert.Equal(t, done, again, "a finished status is stable")

	complete := computeStatus(&appsv1alpha1.BroadcastJob{}, tally, 0, newCondition(appsv1alpha1.JobComplete, ReasonCompleted, "", now), false, now)
	assert.Equal(t, appsv1alpha1.PhaseCompleted, complete.Phase)
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	conds := []appsv1alpha1.JobCondition{*newCondition(appsv1alpha1.JobFailed, "A", "", t0)}
	conds = setCondition(conds, *newCondition(appsv1alpha1.JobFailed, "B", "", t0.Add(time.Hour)))
	require.Len(t, conds, 1)
	assert.Equal(t, "B", conds[0].Reason)
	assert.Equal(t, t0, conds[0].LastTransitionTime.Time.UTC())
	assert.Equal(t, t0.Add(time.Hour), conds[0].LastProbeTime.Time.UTC())
}
