package advancedcronjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Defaults of the history limits when the API server did not default them (it normally does).
const (
	defaultSuccessfulJobsHistoryLimit = 3
	defaultFailedJobsHistoryLimit     = 1
)

// truncateHistory deletes the finished children beyond the history limits and returns children with those marked
// as being deleted.
func (c *Controller) truncateHistory(ctx context.Context, acj *appsv1alpha1.AdvancedCronJob, children []child) ([]child, error) {
	okLimit := ptr.Deref(acj.Spec.SuccessfulJobsHistoryLimit, defaultSuccessfulJobsHistoryLimit)
	failLimit := ptr.Deref(acj.Spec.FailedJobsHistoryLimit, defaultFailedJobsHistoryLimit)
	for _, ch := range beyondHistory(children, okLimit, failLimit) {
		if err := c.deleteChild(ctx, acj, ch, "beyond the history limit"); err != nil {
			return children, err
		}
		markDeleting(children, ch.UID)
	}
	return children, nil
}

// dueRun returns the start time to run now, or zero. Whatever it returns, it has queued the key again for the
// next start time, unless the AdvancedCronJob is paused (unpausing is an update, which enqueues it) or its schedule is unusable (only a spec
// change, again an update, can fix that: sync returns it as a permanent error, which is not retried).
func (c *Controller) dueRun(ctx context.Context, key types.NamespacedName, acj *appsv1alpha1.AdvancedCronJob, children []child,
	sched schedule, err error) time.Time {
	logger := klog.FromContext(ctx)
	if ptr.Deref(acj.Spec.Paused, false) {
		logger.V(4).Info("Paused")
		return time.Time{}
	}
	if err != nil {
		var se *specError
		reason := reasonInvalidSchedule
		if errors.As(err, &se) {
			reason = se.Reason
		}
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, reason, "Not scheduling: %v", err)
		return time.Time{}
	}
	now := c.Clock.Now()
	earliest := acj.CreationTimestamp.Time
	if last := lastScheduled(acj, children, c.lastRuns.get(key, acj.UID)); !last.IsZero() {
		earliest = last
	}
	plan := planRuns(sched, earliest, now, acj.Spec.StartingDeadlineSeconds)
	if !plan.Next.IsZero() {
		c.Queue.AddAfter(key, plan.Next.Sub(now))
	}
	switch {
	case plan.TooMany:
		logger.Info("Too many missed start times: only the most recent is considered", "since", earliest, "mostRecent", plan.Scheduled)
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"More than %d start times missed since %s: only the most recent, %s, is considered for a run. Set or decrease startingDeadlineSeconds, or check clock skew",
			maxMissedRuns, earliest.UTC().Format(time.RFC3339), plan.Scheduled.UTC().Format(time.RFC3339))
	case plan.Skipped:
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, "MissSchedule",
			"Missed start time(s) by more than startingDeadlineSeconds (%ds); next start at %s",
			ptr.Deref(acj.Spec.StartingDeadlineSeconds, 0), plan.Next.UTC().Format(time.RFC3339))
	}
	if plan.Scheduled.IsZero() {
		return time.Time{}
	}
	if acj.Spec.ConcurrencyPolicy == appsv1alpha1.ForbidConcurrent && len(active(children)) > 0 {
		logger.V(2).Info("Not starting a run while another is active (concurrencyPolicy Forbid)", "scheduled", plan.Scheduled)
		c.Recorder.Eventf(acj, corev1.EventTypeNormal, "JobAlreadyActive",
			"Not starting the run scheduled at %s: a previous run is still active and concurrencyPolicy is Forbid",
			plan.Scheduled.UTC().Format(time.RFC3339))
		return time.Time{}
	}
	return plan.Scheduled
}

// startRun starts the run scheduled at t and returns children updated with what it did.
func (c *Controller) startRun(ctx context.Context, key types.NamespacedName, acj *appsv1alpha1.AdvancedCronJob, children []child, t time.Time) ([]child, error) {
	if acj.Spec.ConcurrencyPolicy == appsv1alpha1.ReplaceConcurrent {
		for _, a := range active(children) {
			why := fmt.Sprintf("replaced by the run scheduled at %s", t.UTC().Format(time.RFC3339))
			if err := c.deleteChild(ctx, acj, a, why); err != nil {
				return children, err
			}
			markDeleting(children, a.UID)
		}
	}
	created, err := c.createChild(ctx, acj, t)
	if err != nil {
		return children, err // the slot is not recorded as run
	}
	c.lastRuns.set(key, acj.UID, t)
	if created != nil {
		children = append(children, *created)
	}
	return children, nil
}

func markDeleting(children []child, uid types.UID) {
	for i := range children {
		if children[i].UID == uid {
			children[i].Deleting = true
		}
	}
}
