package workload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
)

// WriteLifecycle writes a lifecycle hook step to p (kit/lifecycle) and
// records the written pod in RV.
func (b *Base) WriteLifecycle(ctx context.Context, p *corev1.Pod, patch lifecycle.Patch) error {
	out, err := b.Lifecycle.Patch(ctx, p, patch)
	if err != nil {
		return fmt.Errorf("update lifecycle of pod %s: %w", p.Name, err)
	}
	if out != nil {
		b.RV.Expect(out)
	}
	return nil
}

// UpdateInPlace updates p in place as req says (kit/inplace), reports the
// outcome as an event on owner (OpenKruise's reasons and messages), records
// the written pod in RV and, with a grace period, asks requeue for its end
// (the containers restart then).
func (b *Base) UpdateInPlace(ctx context.Context, owner runtime.Object, p *corev1.Pod, req inplaceclient.UpdateRequest, requeue *controller.Requeue) error {
	out, err := b.InPlace.Update(ctx, p, req)
	if err != nil {
		b.Recorder.Eventf(owner, corev1.EventTypeWarning, "FailedUpdatePodInPlace", "failed to update pod %s in-place: %v", p.Name, err)
		return err
	}
	b.RV.Expect(out)
	b.Recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "successfully update pod %s in-place(revision %s)", p.Name, req.Revision)
	if req.GracePeriodSeconds > 0 {
		requeue.After(time.Duration(req.GracePeriodSeconds) * time.Second)
	}
	return nil
}

// PreDelete is the lifecycle's step for a pod the workload is about to
// delete (kit/lifecycle, OpDelete): a preDelete hook that holds the pod moves
// it into PreparingDelete, with the event OpenKruise emits on owner, instead
// of letting it go. proceed says the pod may be deleted now; wrote that a
// lifecycle write was made.
func (b *Base) PreDelete(ctx context.Context, owner runtime.Object, lc *pub.Lifecycle, p *corev1.Pod, now time.Time) (proceed, wrote bool, err error) {
	dec := lifecycle.Decide(lc, p, lifecycle.Request{Op: lifecycle.OpDelete}, now)
	switch dec.Action {
	case lifecycle.ActionPatch:
		if err := b.WriteLifecycle(ctx, p, dec.Patch); err != nil {
			return false, false, err
		}
		if dec.Patch.State == pub.LifecycleStatePreparingDelete {
			b.Recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulPreparingDelete", "succeed to update pod %s lifecycle to PreparingDelete", p.Name)
		}
		return false, true, nil
	case lifecycle.ActionProceed:
		return true, false, nil
	default:
		return false, false, nil
	}
}

// ConfirmAgentRecord confirms the refusal why on the pod as the API server has it when why is
// inplace.NotInPlaceNoAgentRecord: the pod cache may trail the node agent's record (a template changed right after
// the agent recorded the pod), and that refusal recreates the pod, or refuses the update under InPlaceOnly. It
// returns "" when the live pod (the same UID) carries the record, why otherwise.
func (b *Base) ConfirmAgentRecord(ctx context.Context, p *corev1.Pod, why string) (string, error) {
	if why != inplace.NotInPlaceNoAgentRecord {
		return why, nil
	}
	live, err := b.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return why, nil
	}
	if err != nil {
		return "", fmt.Errorf("read pod %s for its node agent record: %w", p.Name, err)
	}
	if live.UID == p.UID && live.Annotations[pub.RuntimeContainerMetaKey] != "" {
		return "", nil
	}
	return why, nil
}
