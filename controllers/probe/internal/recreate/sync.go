package recreate

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// sync serves the first request of one pod (key: the pod): phase Recreating, the unready grace period, then the
// container states from the runtime; a stop is recorded in the status before it is carried out (see stopsDue).
func (w *Worker) sync(ctx context.Context, key types.NamespacedName) error {
	crrs, err := w.requests(key)
	if err != nil || len(crrs) == 0 {
		return err
	}
	crr := crrs[0]
	for _, other := range crrs[1:] {
		if other.Status.Phase == "" {
			if err := w.setPhase(ctx, other, appsv1alpha1.ContainerRecreateRequestPending); err != nil {
				return err
			}
		}
	}
	if crr.Status.Phase != appsv1alpha1.ContainerRecreateRequestRecreating {
		return w.setPhase(ctx, crr, appsv1alpha1.ContainerRecreateRequestRecreating)
	}
	if wait, msg := w.unreadyWait(crr); msg != "" {
		return w.complete(ctx, crr, crr.Status.ContainerRecreateStates, msg)
	} else if wait != 0 {
		if wait > 0 {
			w.Queue.AddAfter(key, wait)
		}
		return nil
	}
	current, err := w.containers(ctx, crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey])
	if err != nil {
		return err
	}
	states := currentStates(crr, current, w.clock.Now())
	if failed(crr, states) || done(states) {
		return w.complete(ctx, crr, states, "")
	}
	markStops(crr, states)
	if !reflect.DeepEqual(crr.Status.ContainerRecreateStates, states) {
		return w.writeStates(ctx, crr, states)
	}
	if err := w.stopAll(ctx, crr, stopsDue(crr, current)); err != nil {
		return err
	}
	w.Queue.AddAfter(key, pollInterval)
	return nil
}

// unreadyWait is how long the request must still wait for its unready grace period: 0 when it may go on, a
// negative value while the controller has not yet made the pod NotReady (its annotation write wakes the worker),
// or the message the request completes with when the annotation does not parse.
func (w *Worker) unreadyWait(crr *appsv1alpha1.ContainerRecreateRequest) (time.Duration, string) {
	s := crr.Spec.Strategy
	if s == nil || s.UnreadyGracePeriodSeconds == nil {
		return 0, ""
	}
	v := crr.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
	if v == "" {
		return -1, ""
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, fmt.Sprintf("failed to parse unready time %s: %v", v, err)
	}
	if left := time.Duration(*s.UnreadyGracePeriodSeconds)*time.Second - w.clock.Since(at); left > 0 {
		return left + 100*time.Millisecond, ""
	}
	return 0, ""
}
