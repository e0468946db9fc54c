package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// upgradePods carries out the plan: hot-upgrade flips, not-upgradable
// verdicts, in-place upgrades, and upgradable verdicts restored.
func (c *Controller) upgradePods(ctx context.Context, set *appsv1alpha1.SidecarSet, pods []*corev1.Pod, latestName string) error {
	logger := klog.FromContext(ctx)
	p := planUpgrade(set, pods, c.clock.Now())
	var errs []error
	for _, pod := range p.flip {
		errs = append(errs, c.flip(ctx, set, pod))
	}
	for _, pod := range p.notUpgradable {
		errs = append(errs, c.setUpgradable(ctx, set, pod, false))
	}
	c.reportUnreadable(set, p)
	patchAllowed := c.patchAllowed(ctx, set)
	upgraded := map[types.UID]bool{}
	for _, pod := range p.upgrade {
		err := c.upgrade(ctx, set, pod, latestName, patchAllowed)
		if err == nil {
			upgraded[pod.UID] = true
		}
		errs = append(errs, err)
	}
	// One event per round, not per pod: at scale, per-pod events would be
	// as many API writes as the upgrades themselves.
	if len(upgraded) > 0 {
		c.recorder.Eventf(set, corev1.EventTypeNormal, "UpgradeSidecars", "upgrading sidecars of %d pod(s) in place to %s", len(upgraded), latestName)
	}
	if len(p.notUpgradable) > 0 {
		logger.V(2).Info("Pods not upgradable in place: containers changed beyond images", "count", len(p.notUpgradable))
	}
	// A pod recorded as not upgradable that now is (the SidecarSet went back
	// to an image-only difference, or to the pod's version): record it as
	// upgradable again. OpenKruise does this only when it upgrades the pod,
	// leaving a stale False on a pod the SidecarSet went back to. Pods
	// upgraded above got their verdict with the upgrade (and the cache
	// still shows them before it).
	for _, pod := range pods {
		if !upgraded[pod.UID] && sidecarcontrol.RecordedNotUpgradable(pod, set.Name) && sidecarcontrol.InPlaceUpgradable(pod, set) &&
			sidecarcontrol.CorruptAnnotation(pod) == nil {
			errs = append(errs, c.setUpgradable(ctx, set, pod, true))
		}
	}
	return errors.Join(errs...)
}

// reportUnreadable makes what the plan could not read visible: an update
// strategy that does not parse (nothing is upgraded), and pods whose upgrade
// annotations are corrupt (left alone). Both are Warning events: on the
// SidecarSet, and on each such pod (at most maxPodEvents per sync, bounding
// the writes). OpenKruise's SidecarSet status has no conditions, and the
// pods' SidecarSetUpgradable condition means "cannot change in place", which
// is not what was seen, so neither is written.
func (c *Controller) reportUnreadable(set *appsv1alpha1.SidecarSet, p plan) {
	if p.invalid != nil {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "InvalidUpdateStrategy", "not upgrading any pod: %v", p.invalid)
	}
	if len(p.corrupt) == 0 {
		return
	}
	first := p.corrupt[0]
	c.recorder.Eventf(set, corev1.EventTypeWarning, "CorruptPodAnnotation",
		"%d pod(s) left alone, their sidecar upgrade state unreadable; first %s/%s: %v",
		len(p.corrupt), first.pod.Namespace, first.pod.Name, first.err)
	for _, cp := range p.corrupt[:min(len(p.corrupt), maxPodEvents)] {
		c.recorder.Eventf(cp.pod, corev1.EventTypeWarning, "CorruptPodAnnotation",
			"sidecarset %s does not upgrade this pod: %v (remove the annotation to let the controller start over)", set.Name, cp.err)
	}
}

// maxPodEvents bounds the per-pod events one sync records.
const maxPodEvents = 10

// patchAllowed: whether patchPodMetadata may be re-applied in upgrades.
func (c *Controller) patchAllowed(ctx context.Context, set *appsv1alpha1.SidecarSet) bool {
	if len(set.Spec.PatchPodMetadata) == 0 {
		return false
	}
	w, err := c.whitelist()
	if err == nil {
		err = sidecarcontrol.CheckPatchPodMetadata(set, w, c.gates.Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed))
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("patchPodMetadata not re-applied in upgrades", "sidecarSet", set.Name, "reason", err.Error())
		return false
	}
	return true
}

// upgrade writes one pod's in-place upgrade (cache object deep-copied by
// sidecarcontrol.Upgrade) as a patch of the difference. A conflict is retried by the next sync, which
// re-plans from a fresher cache.
func (c *Controller) upgrade(ctx context.Context, set *appsv1alpha1.SidecarSet, pod *corev1.Pod, revision string, patchAllowed bool) error {
	next, changed, err := sidecarcontrol.Upgrade(pod, set, revision, patchAllowed, c.clock.Now())
	if err != nil {
		return err
	}
	updated, err := c.podControl.Patch(ctx, pod, next)
	if err != nil {
		return fmt.Errorf("upgrade sidecars of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.rvExp.Expect(updated)
	klog.FromContext(ctx).V(2).Info("Upgraded sidecars in place", "pod", klog.KObj(pod), "containers", changed, "revision", revision)
	// As OpenKruise: every upgrade records the SidecarSet as upgradable in
	// the pod's SidecarSetUpgradable condition (True once all are).
	return c.setUpgradable(ctx, set, updated, true)
}

// flip resets the old container of finished hot upgrades to the empty image.
func (c *Controller) flip(ctx context.Context, set *appsv1alpha1.SidecarSet, pod *corev1.Pod) error {
	next, changed, err := sidecarcontrol.Flip(pod, set, c.clock.Now())
	if err != nil || len(changed) == 0 {
		return err
	}
	updated, err := c.podControl.Patch(ctx, pod, next)
	if err != nil {
		return fmt.Errorf("reset hot-upgrade containers of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.rvExp.Expect(updated)
	c.recorder.Eventf(updated, corev1.EventTypeNormal, "ResetContainerSucceed", "sidecarset %s: hot-upgrade containers %v back on the empty image", set.Name, changed)
	return nil
}

// setUpgradable writes the pod's SidecarSetUpgradable condition when this
// SidecarSet's verdict changes it.
func (c *Controller) setUpgradable(ctx context.Context, set *appsv1alpha1.SidecarSet, pod *corev1.Pod, upgradable bool) error {
	cond, changed := sidecarcontrol.SetUpgradableCondition(pod, set.Name, upgradable, c.clock.Now())
	if !changed {
		return nil
	}
	next := pod.DeepCopy()
	replaced := false
	for i := range next.Status.Conditions {
		if next.Status.Conditions[i].Type == cond.Type {
			next.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		next.Status.Conditions = append(next.Status.Conditions, cond)
	}
	updated, err := c.podControl.PatchStatus(ctx, pod, next)
	if err != nil {
		return fmt.Errorf("set condition %s of pod %s/%s: %w", cond.Type, pod.Namespace, pod.Name, err)
	}
	c.rvExp.Expect(updated)
	return nil
}
