package broadcastjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Condition reasons this controller writes.
const (
	ReasonCompleted        = "Completed"
	ReasonFailFast         = "FailFast"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonInvalidSpec      = "InvalidSpec"
)

// finishedCondition returns the job's True Complete or Failed condition, nil while it runs.
func finishedCondition(s appsv1alpha1.BroadcastJobStatus) *appsv1alpha1.JobCondition {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if (c.Type == appsv1alpha1.JobComplete || c.Type == appsv1alpha1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// computeStatus is the status the job should have: counters from the tally, desired = the nodes it runs on, the start
// time (set on the first sync), and, when the job finishes now, its condition and completion time (set for Failed
// too, so TTL has one clock). It never mutates job.
func computeStatus(job *appsv1alpha1.BroadcastJob, t podTally, desired int, finish *appsv1alpha1.JobCondition, paused bool, now time.Time) appsv1alpha1.BroadcastJobStatus {
	s := *job.Status.DeepCopy()
	s.Active = int32(len(t.active))
	s.Succeeded = t.succeeded
	s.Failed = t.failed
	s.Desired = int32(desired)
	ts := metav1.NewTime(now).Rfc3339Copy()
	if s.StartTime == nil {
		s.StartTime = &ts
	}
	if finish != nil {
		s.Conditions = setCondition(s.Conditions, *finish)
		s.CompletionTime = &ts
	}
	s.Phase = phase(s, paused)
	return s
}

// setCondition replaces the condition of the same type, keeping its transition time if the status is unchanged.
func setCondition(conds []appsv1alpha1.JobCondition, c appsv1alpha1.JobCondition) []appsv1alpha1.JobCondition {
	for i := range conds {
		if conds[i].Type == c.Type {
			if conds[i].Status == c.Status {
				c.LastTransitionTime = conds[i].LastTransitionTime
			}
			conds[i] = c
			return conds
		}
	}
	return append(conds, c)
}

// phase is failed/completed once finished, paused while spec.paused or held by failurePolicy Pause, else running.
func phase(s appsv1alpha1.BroadcastJobStatus, paused bool) appsv1alpha1.BroadcastJobPhase {
	if c := finishedCondition(s); c != nil {
		if c.Type == appsv1alpha1.JobFailed {
			return appsv1alpha1.PhaseFailed
		}
		return appsv1alpha1.PhaseCompleted
	}
	if paused {
		return appsv1alpha1.PhasePaused
	}
	return appsv1alpha1.PhaseRunning
}

// updateStatus writes status if it differs from what job has. job is the cached object: it is copied, never
// modified.
func (c *Controller) updateStatus(ctx context.Context, job *appsv1alpha1.BroadcastJob, status appsv1alpha1.BroadcastJobStatus) error {
	_, err := workload.WriteStatus(ctx, c.Base, workload.StatusWrite[appsv1alpha1.BroadcastJobStatus]{Cur: job.Status, Next: status},
		workload.StatusUpdate(c.client.AppsV1alpha1().BroadcastJobs(job.Namespace), job,
			func(j *appsv1alpha1.BroadcastJob, s appsv1alpha1.BroadcastJobStatus) { j.Status = s }))
	if err != nil {
		return fmt.Errorf("BroadcastJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}
