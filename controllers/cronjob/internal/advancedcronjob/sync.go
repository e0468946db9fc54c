package advancedcronjob

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one AdvancedCronJob: gather its children, trim the finished ones beyond the history limits,
// decide whether a run is due, start it, then write the status. It reads only from the informer caches and
// writes through the clients; the cached objects are never modified.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	acj, found, err := controller.Lookup("AdvancedCronJob", key, c.acjs.AdvancedCronJobs(key.Namespace).Get)
	if err != nil {
		return err
	}
	if !found {
		c.lastRuns.forget(key) // deleted: the garbage collector removes its children
		return nil
	}
	if acj.DeletionTimestamp != nil {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "advancedcronjob", klog.KObj(acj)))

	// Gather: the Jobs or BroadcastJobs this AdvancedCronJob controls, oldest first.
	children, err := childrenOf(acj, c.jobs, c.bcjs)
	if err != nil {
		return err
	}

	// History: finished children beyond successfulJobsHistoryLimit / failedJobsHistoryLimit go, oldest first.
	children, err = c.truncateHistory(ctx, acj, children)
	if err != nil {
		return err
	}

	// Decide: the most recent start time not yet run, if any may start now. This also requeues the key for the
	// next start time, and reports an unusable schedule or too many missed start times.
	sched, schedErr := parseSchedule(acj.Spec.Schedule, acj.Spec.TimeZone, c.defaultLoc)
	scheduled := c.dueRun(ctx, key, acj, children, sched, schedErr)

	// Act: start the run (Replace first deletes the active children).
	var runErr error
	if !scheduled.IsZero() {
		children, runErr = c.startRun(ctx, key, acj, children, scheduled)
		if controller.Retryable(runErr) != nil {
			return runErr
		}
	}

	// Status: active children, last scheduled time, child kind and whether the schedule is usable, written only
	// if it changed.
	st := calculateStatus(acj, children, c.lastRuns.get(key, acj.UID), schedErr, c.Clock.Now())
	if err := c.updateStatus(ctx, acj, st); err != nil {
		return err
	}
	// nil, or permanent (an unusable schedule, a child the API server rejects), reported by events and status:
	// the loop logs it and does not retry it.
	return errors.Join(runErr, controller.Permanent(schedErr))
}
