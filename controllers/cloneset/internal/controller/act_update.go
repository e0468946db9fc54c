package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// update moves pods towards the update revision (or back to the current one
// under CloneSetPartitionRollback) within partition and maxUnavailable: in
// place where the strategy and the template change allow, otherwise by
// marking the pod specified-delete so that scale replaces it.
func (c *Controller) update(ctx context.Context, st *syncState) error {
	us := st.cs.Spec.UpdateStrategy
	if us.Paused || us.Type == appsv1alpha1.OnDeleteCloneSetUpdateStrategyType {
		return nil
	}
	d := calculateDiffs(st.diffInput())
	if d.updateNum == 0 {
		return nil
	}
	target := st.Update
	if d.updateNum < 0 {
		target = st.Current
	}
	pods := st.updateCandidates(d.updateNum > 0)
	pods = sortForUpdate(st, pods)
	pods = limitUpdates(st, pods, abs(d.updateNum), d.updateMaxUnavailable, target)
	return controller.ForEach(pods, writeConcurrency, func(p *corev1.Pod) error { return c.updatePod(ctx, st, p, target) })
}

// updatePod updates one pod to target: in place when allowed and possible,
// through the inPlaceUpdate hook's states; otherwise recreation.
func (c *Controller) updatePod(ctx context.Context, st *syncState, p *corev1.Pod, target *appsv1.ControllerRevision) error {
	us := st.cs.Spec.UpdateStrategy
	if us.Type == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType || us.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		spec, why := c.inPlaceSpec(st, p, target)
		why, err := c.ConfirmAgentRecord(ctx, p, why)
		if err != nil {
			return err
		}
		if why == "" {
			return c.updateInPlace(ctx, st, p, target, spec)
		}
		if us.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
			c.Recorder.Eventf(st.cs, corev1.EventTypeWarning, "FailedUpdatePodInPlace",
				"updateStrategy.type is InPlaceOnly but pod %s cannot be updated to %s in place: %s", p.Name, target.Name, why)
			return fmt.Errorf("pod %s: %w: %s", p.Name, errInPlaceOnly, why)
		}
		klog.FromContext(ctx).V(2).Info("Cannot update in place, recreating", "pod", klog.KObj(p), "revision", target.Name, "reason", why)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, pub.SpecifiedDeleteKey)
	out, err := c.PodControl.PatchBytes(ctx, p, types.StrategicMergePatchType, []byte(patch))
	if err != nil {
		return fmt.Errorf("mark pod %s for recreation: %w", p.Name, err)
	}
	c.RV.Expect(out)
	return nil
}

// errInPlaceOnly is permanent until the user changes the template or the
// strategy: it is reported (Warning event, FailedUpdate condition) but not
// retried, since the template change will bring the CloneSet back anyway.
var errInPlaceOnly = controller.Permanent(errors.New("updateStrategy.type InPlaceOnly: the template change cannot be applied in place"))

// inPlaceSpec is the in-place change from the pod's revision to target, or
// why there is none.
func (c *Controller) inPlaceSpec(st *syncState, p *corev1.Pod, target *appsv1.ControllerRevision) (inplace.Spec, string) {
	from := st.revisionByName(p.Labels[pub.ControllerRevisionHashLabelKey])
	if from == nil {
		return inplace.Spec{}, "the pod's revision is gone"
	}
	if c.Gates.Enabled(features.RecreatePodWhenChangeVCTInCloneSetGate) && vctChanged(from, target, st.cs.Spec.VolumeClaimTemplates) {
		return inplace.Spec{}, "volumeClaimTemplates changed (RecreatePodWhenChangeVCTInCloneSetGate)"
	}
	spec, ok := inplace.Diff(from.Data.Raw, target.Data.Raw)
	return spec, inplace.RefusalForPod(p, spec, ok, c.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata))
}

func (c *Controller) updateInPlace(ctx context.Context, st *syncState, p *corev1.Pod, target *appsv1.ControllerRevision, spec inplace.Spec) error {
	dec := lifecycle.Decide(st.cs.Spec.Lifecycle, p, lifecycle.Request{Op: lifecycle.OpInPlaceUpdate}, st.now)
	switch dec.Action {
	case lifecycle.ActionPatch:
		if err := c.WriteLifecycle(ctx, p, dec.Patch); err != nil {
			return err
		}
		if dec.Patch.State != "" {
			c.Recorder.Eventf(st.cs, corev1.EventTypeNormal, "PodLifecycle", "pod %s lifecycle moved to %s", p.Name, dec.Patch.State)
		}
		return nil
	case lifecycle.ActionRefuse:
		return fmt.Errorf("in-place update pod %s: %s", p.Name, dec.Reason)
	case lifecycle.ActionProceed:
	default:
		return nil
	}
	hash := revision.ShortHash(target.Name)
	revLabel := target.Name
	if st.shortHash {
		revLabel = hash
	}
	var grace int32
	if s := st.cs.Spec.UpdateStrategy.InPlaceUpdateStrategy; s != nil {
		grace = s.GracePeriodSeconds
	}
	return c.UpdateInPlace(ctx, st.cs, p, inplaceclient.UpdateRequest{
		Revision:           target.Name,
		Spec:               spec,
		Labels:             map[string]string{pub.ControllerRevisionHashLabelKey: revLabel, pub.PodTemplateHashLabelKey: hash},
		Mutate:             dec.Patch.ApplyMetadata,
		GracePeriodSeconds: grace,
	}, &st.requeue)
}
