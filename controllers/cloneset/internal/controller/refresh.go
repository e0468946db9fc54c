package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
)

// refreshPods advances every pod that has something pending, independent of
// scaling or updating: the conditions of the readiness gates the controller
// injected, grace periods and container batches of in-place updates, and the
// lifecycle towards Normal. It returns true when it wrote anything; the
// update step then waits for the next sync, so it never decides on a pod
// whose cached copy is older than our own write. Errors of one pod do not stop
// the others.
func (c *Controller) refreshPods(ctx context.Context, st *syncState) (bool, error) {
	wrote := false
	var errs []error
	for _, p := range st.pods {
		w, err := c.refreshPod(ctx, st, p)
		wrote = wrote || w
		if err != nil {
			errs = append(errs, err)
		}
	}
	return wrote, errors.Join(errs...)
}

func (c *Controller) refreshPod(ctx context.Context, st *syncState, p *corev1.Pod) (bool, error) {
	wrote := false
	if changed, conds := podreadiness.InitGateConditions(p, st.now, pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType); changed {
		cp := p.DeepCopy()
		cp.Status.Conditions = conds
		out, err := c.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			// The kubelet (kwok) wrote the pod meanwhile; its event brings
			// us back with a fresh copy.
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("initialise readiness conditions of pod %s: %w", p.Name, err)
		}
		c.rvExp.Expect(out)
		p, wrote = out, true
	}
	res, err := c.inplace.Refresh(ctx, p, st.update.Name)
	if apierrors.IsConflict(err) {
		return true, nil
	}
	if err != nil {
		return wrote, err
	}
	st.requeueAfter(res.RequeueAfter)
	if res.Written {
		c.rvExp.Expect(res.Pod)
		return true, nil // the lifecycle step waits for the cache to show this write
	}
	state, err := inplace.DecodeState(p)
	if err != nil {
		return wrote, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	lc := st.cs.Spec.Lifecycle
	req := lifecycle.Request{
		Op:                lifecycle.OpBecomeNormal,
		WaitForScheduling: lc == nil || lc.PreNormal == nil,
		AtUpdateRevision:  st.isUpdated(p),
		UpdateCompleted:   inplace.UpdateCompleted(p, state),
	}
	dec := lifecycle.Decide(lc, p, req, st.now)
	if dec.Action != lifecycle.ActionPatch {
		return wrote, nil
	}
	if err := c.writeLifecycle(ctx, p, dec.Patch); err != nil {
		return wrote, err
	}
	return true, nil
}
