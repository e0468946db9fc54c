package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// settled reports, without decoding anything, that neither an in-place
// update nor the lifecycle has a step pending on the pod: Normal (or no
// lifecycle state), no in-place state or grace period, no lifecycle key
// holding KruisePodReady False, and InPlaceUpdateReady not left False (an
// update whose pod write never landed: the refresh sets it True again,
// kit/inplace.MarkReady). Most pods are settled most of the time; the
// refresh runs over every pod at every sync, so this check is what it costs
// for them.
func settled(p *corev1.Pod) bool {
	if !podutil.IsLifecycleNormal(p) {
		return false
	}
	if _, ok := p.Annotations[pub.InPlaceUpdateStateKey]; ok {
		return false
	}
	if _, ok := p.Annotations[pub.InPlaceUpdateGraceKey]; ok {
		return false
	}
	if c := podutil.GetCondition(p, pub.InPlaceUpdateReady); c != nil && c.Status != corev1.ConditionTrue {
		return false
	}
	c := podutil.GetCondition(p, pub.KruisePodReadyConditionType)
	return c == nil || c.Status == corev1.ConditionTrue
}

// becomeNormal is the lifecycle step of the refresh: towards Normal.
func becomeNormal(cs *appsv1alpha1.CloneSet, p *corev1.Pod, atUpdateRevision bool, now time.Time) (lifecycle.Decision, error) {
	state, err := inplace.DecodeState(p)
	if err != nil {
		return lifecycle.Decision{}, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	lc := cs.Spec.Lifecycle
	req := lifecycle.Request{
		Op:                lifecycle.OpBecomeNormal,
		WaitForScheduling: lc == nil || lc.PreNormal == nil,
		AtUpdateRevision:  atUpdateRevision,
		UpdateCompleted:   inplace.UpdateCompleted(p, state),
	}
	return lifecycle.Decide(lc, p, req, now), nil
}
