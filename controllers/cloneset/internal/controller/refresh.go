package controller

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/controller"
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
	wrote := false
	if changed, conds := podreadiness.InitGateConditions(p, st.now, pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType); changed {
		if p.Spec.NodeName == "" {
			// Nothing can be ready before it runs: initialise the conditions
			// with the move to Normal, in one write, once it is scheduled.
			return false, nil
		}
		out, err := c.initPod(ctx, st, p, conds)
		if apierrors.IsConflict(err) {
			// The kubelet (kwok) wrote the pod meanwhile; its event brings
			// us back with a fresh copy.
			return true, nil
		}
		if err != nil {
			return false, err
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
	dec, err := becomeNormal(st, p)
	if err != nil || dec.Action != lifecycle.ActionPatch {
		return wrote, err
	}
	if err := c.writeLifecycle(ctx, p, dec.Patch); err != nil {
		return wrote, err
	}
	return true, nil
}

// becomeNormal is the lifecycle step of the refresh: towards Normal.
func becomeNormal(st *syncState, p *corev1.Pod) (lifecycle.Decision, error) {
	state, err := inplace.DecodeState(p)
	if err != nil {
		return lifecycle.Decision{}, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	lc := st.cs.Spec.Lifecycle
	req := lifecycle.Request{
		Op:                lifecycle.OpBecomeNormal,
		WaitForScheduling: lc == nil || lc.PreNormal == nil,
		AtUpdateRevision:  st.isUpdated(p),
		UpdateCompleted:   inplace.UpdateCompleted(p, state),
	}
	return lifecycle.Decide(lc, p, req, st.now), nil
}

// initPod writes the conditions of the readiness gates a new pod carries
// and, in the same pods/status write, its move from PreparingNormal to Normal
// when that is due (the API server keeps label and annotation changes made
// through pods/status). If the returned pod does not show the new state, the
// lifecycle patch is written separately.
func (c *Controller) initPod(ctx context.Context, st *syncState, p *corev1.Pod, conds []corev1.PodCondition) (*corev1.Pod, error) {
	cp := p.DeepCopy()
	cp.Status.Conditions = conds
	dec, err := becomeNormal(st, p)
	if err != nil {
		return nil, err
	}
	combined := dec.Action == lifecycle.ActionPatch && len(dec.Patch.Finalizers) == 0 &&
		len(dec.Patch.AddNotReady) == 0 && len(dec.Patch.RemoveNotReady) == 0
	if combined {
		dec.Patch.ApplyMetadata(cp)
	}
	out, err := c.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("initialise readiness conditions of pod %s: %w", p.Name, err)
	}
	if combined && lifecycle.State(out) != dec.Patch.State {
		if err := c.writeLifecycle(ctx, out, dec.Patch); err != nil {
			return nil, err
		}
	}
	return out, nil
}
