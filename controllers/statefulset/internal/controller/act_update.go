package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// errInPlaceOnly is permanent until the user changes the template or the
// policy: reported (Warning event, FailedUpdatePod condition), not retried.
var errInPlaceOnly = controller.Permanent(errors.New("podUpdatePolicy InPlaceOnly: the template change cannot be applied in place"))

// rollOut moves pods to the update revision within the partition and
// maxUnavailable (planUpdate): in place where podUpdatePolicy, the pod's
// InPlaceUpdateReady gate and the template change allow, otherwise by
// deleting the pod (through the preDelete hook) for scale to create it again.
func (c *Controller) rollOut(ctx context.Context, st *syncState) error {
	us := st.set.Spec.UpdateStrategy
	ru := us.RollingUpdate
	switch {
	case us.Type == appsv1.OnDeleteStatefulSetStrategyType:
		// Only specified-delete pods: every slot is "below the partition".
		ru = &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(len(st.slots)))}
	case ru == nil:
		ru = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
	case ru.Paused:
		return nil
	}
	in := updateInput{
		slots:          st.slots,
		pods:           st.pods,
		partition:      int(ptr.Deref(ru.Partition, 0)),
		maxUnavailable: updateMaxUnavailable(ru, len(st.slots)),
		isUpdated:      st.isUpdated,
		available:      func(p *corev1.Pod) bool { return st.available(p) },
	}
	if ru.UnorderedUpdate != nil && st.set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement {
		in.unordered = ru.UnorderedUpdate.PriorityStrategy
	}
	targets := planUpdate(in)
	return controller.ForEach(targets, writeConcurrency, func(p *corev1.Pod) error { return c.updatePod(ctx, st, p) })
}

// updatePod deletes a specified-delete pod, or moves one pod to the update
// revision: in place when allowed and possible, otherwise by recreation.
func (c *Controller) updatePod(ctx context.Context, st *syncState, p *corev1.Pod) error {
	if podutil.IsSpecifiedDelete(p) {
		_, err := c.deleteWithHook(ctx, st, p, "specified-delete")
		return err
	}
	policy := appsv1beta1.RecreatePodUpdateStrategyType
	if ru := st.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.PodUpdatePolicy != "" {
		policy = ru.PodUpdatePolicy
	}
	if policy != appsv1beta1.RecreatePodUpdateStrategyType {
		spec, why := c.inPlaceSpec(st, p)
		why, err := c.ConfirmAgentRecord(ctx, p, why)
		if err != nil {
			return err
		}
		if why == "" {
			return c.updateInPlace(ctx, st, p, spec)
		}
		if policy == appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
			c.Recorder.Eventf(st.set, corev1.EventTypeWarning, "FailedUpdatePodInPlace",
				"podUpdatePolicy is InPlaceOnly but pod %s cannot be updated to %s in place: %s", p.Name, st.Update.Name, why)
			return fmt.Errorf("pod %s: %w: %s", p.Name, errInPlaceOnly, why)
		}
	}
	_, err := c.deleteWithHook(ctx, st, p, fmt.Sprintf("recreate at revision %s (pod at %s)", st.Update.Name, p.Labels[pub.ControllerRevisionHashLabelKey]))
	return err
}

// inPlaceSpec is the in-place change from the pod's revision to the update
// revision, or why there is none. As in OpenKruise, only pods carrying the
// InPlaceUpdateReady readiness gate (from the template) qualify.
func (c *Controller) inPlaceSpec(st *syncState, p *corev1.Pod) (inplace.Spec, string) {
	if !inplace.HasReadinessGate(p) {
		return inplace.Spec{}, "the template has no readiness gate InPlaceUpdateReady"
	}
	var from *appsv1.ControllerRevision
	for _, r := range st.History {
		if r.Name == p.Labels[pub.ControllerRevisionHashLabelKey] {
			from = r
		}
	}
	if from == nil {
		return inplace.Spec{}, "the pod's revision is gone"
	}
	spec, ok := inplace.Diff(from.Data.Raw, st.Update.Data.Raw)
	return spec, inplace.RefusalForPod(p, spec, ok, c.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata))
}

func (c *Controller) updateInPlace(ctx context.Context, st *syncState, p *corev1.Pod, spec inplace.Spec) error {
	dec := lifecycle.Decide(st.set.Spec.Lifecycle, p, lifecycle.Request{Op: lifecycle.OpInPlaceUpdate}, st.now)
	switch dec.Action {
	case lifecycle.ActionPatch:
		return c.WriteLifecycle(ctx, p, dec.Patch)
	case lifecycle.ActionRefuse:
		return fmt.Errorf("in-place update pod %s: %s", p.Name, dec.Reason)
	case lifecycle.ActionProceed:
	default:
		return nil
	}
	var grace int32
	if ru := st.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.InPlaceUpdateStrategy != nil {
		grace = ru.InPlaceUpdateStrategy.GracePeriodSeconds
	}
	return c.UpdateInPlace(ctx, st.set, p, inplaceclient.UpdateRequest{
		Revision:           st.Update.Name,
		Spec:               spec,
		Labels:             map[string]string{pub.ControllerRevisionHashLabelKey: st.Update.Name},
		Mutate:             dec.Patch.ApplyMetadata,
		GracePeriodSeconds: grace,
	}, &st.requeue)
}

// gatedConditions are the readiness gates whose conditions this controller
// owns: KruisePodReady, which it injects, and InPlaceUpdateReady, which the
// template carries for in-place updates.
var gatedConditions = []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType}

// refreshPods advances every pod that has something pending, independent of
// scaling or updating: the first True conditions of its readiness gates
// once scheduled, the grace periods and container batches of in-place
// updates, and the lifecycle towards Normal. It returns true when it wrote
// anything; the next steps then wait for the cache to show it.
func (c *Controller) refreshPods(ctx context.Context, st *syncState) (bool, error) {
	var wrote atomic.Bool
	pods := make([]*corev1.Pod, 0, len(st.pods))
	for _, p := range st.pods {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	err := controller.ForEach(pods, writeConcurrency, func(p *corev1.Pod) error {
		w, err := c.refreshPod(ctx, st, p)
		if w {
			wrote.Store(true)
		}
		if apierrors.IsConflict(err) {
			return nil // the pod changed meanwhile; its event brings the set back
		}
		return err
	})
	return wrote.Load(), err
}

func (c *Controller) refreshPod(ctx context.Context, st *syncState, p *corev1.Pod) (bool, error) {
	if next := podreadiness.WithGateConditions(p, st.now, gatedConditions...); next != nil {
		if p.Spec.NodeName == "" {
			return false, nil // the kubelet reports nothing before scheduling
		}
		out, err := c.PodControl.PatchStatus(ctx, p, next)
		if err != nil {
			return false, fmt.Errorf("initialise readiness conditions of pod %s: %w", p.Name, err)
		}
		c.RV.Expect(out)
		return true, nil
	}
	res, err := c.InPlace.Refresh(ctx, p)
	if err != nil {
		return false, err
	}
	st.requeue.After(res.RequeueAfter)
	if res.Written {
		c.RV.Expect(res.Pod)
		return true, nil
	}
	state, err := inplace.DecodeState(p)
	if err != nil {
		return false, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	dec := lifecycle.Decide(st.set.Spec.Lifecycle, p, lifecycle.Request{
		Op:               lifecycle.OpBecomeNormal,
		AtUpdateRevision: st.isUpdated(p),
		UpdateCompleted:  inplace.UpdateCompleted(p, state),
	}, st.now)
	if dec.Action != lifecycle.ActionPatch {
		return false, nil
	}
	if err := c.WriteLifecycle(ctx, p, dec.Patch); err != nil {
		return false, err
	}
	klog.FromContext(ctx).V(4).Info("Lifecycle moved", "pod", klog.KObj(p), "state", dec.Patch.State)
	return true, nil
}
