package controller

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
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
