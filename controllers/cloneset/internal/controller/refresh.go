package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// refreshPods advances every pod that has something pending, independent of
// scaling or updating: grace periods and container batches of in-place
// updates, and the lifecycle towards Normal. (A new pod's first write — its
// readiness-gate conditions and PreparingNormal → Normal — is the pod loop's,
// newpods.go.) It returns true when it wrote anything; the
// update step then waits for the next sync, so it never decides on a pod
// whose cached copy is older than our own write. Errors of one pod do not stop
// the others.
func (c *Controller) refreshPods(ctx context.Context, st *syncState) (bool, error) {
	var wrote atomic.Bool
	err := controller.ForEach(st.pods, writeConcurrency, func(p *corev1.Pod) error {
		w, err := c.refreshPod(ctx, st, p)
		if w {
			wrote.Store(true)
		}
		return err
	})
	return wrote.Load(), err
}

func (c *Controller) refreshPod(ctx context.Context, st *syncState, p *corev1.Pod) (bool, error) {
	if needsInit(p) || settled(p) {
		return false, nil // the pod loop (newpods.go) owns a new pod's first steps; a settled one has none
	}
	res, err := c.InPlace.Refresh(ctx, p)
	if apierrors.IsConflict(err) {
		return true, nil // the kubelet wrote the pod meanwhile; its event brings us back
	}
	if err != nil {
		return false, err
	}
	st.requeue.After(res.RequeueAfter)
	if res.Written {
		c.RV.Expect(res.Pod)
		return true, nil // the lifecycle step waits for the cache to show this write
	}
	dec, err := becomeNormal(st.cs, p, st.isUpdated(p), st.now)
	if err != nil || dec.Action != lifecycle.ActionPatch {
		return false, err
	}
	if err := c.WriteLifecycle(ctx, p, dec.Patch); err != nil {
		return false, err
	}
	return true, nil
}

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
