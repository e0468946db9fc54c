package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
)

// updateInPlace updates the pods it can in place and returns the others,
// which the caller deletes (recreate).
func (c *Controller) updateInPlace(ctx context.Context, st *syncState, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	logger := klog.FromContext(ctx)
	var recreate []*corev1.Pod
	var todo []*corev1.Pod
	specs := map[string]inplace.Spec{}
	for _, p := range pods {
		spec, why := inPlaceSpec(p, st.History, st.Update, c.Gates.Enabled(features.InPlaceUpdateEnvFromMetadata))
		why, err := c.ConfirmAgentRecord(ctx, p, why)
		if err != nil {
			return nil, err
		}
		if why != "" {
			logger.V(4).Info("Pod cannot be updated in place, recreating it", "pod", klog.KObj(p), "reason", why)
			recreate = append(recreate, p)
			continue
		}
		specs[p.Name] = spec
		todo = append(todo, p)
	}
	var mu sync.Mutex
	err := controller.ForEach(todo, writeConcurrency, func(p *corev1.Pod) error {
		out, err := c.InPlace.Update(ctx, p, inplaceclient.UpdateRequest{
			Revision: st.hash, Spec: specs[p.Name],
			Labels: map[string]string{pub.ControllerRevisionHashLabelKey: st.hash},
		})
		if out != nil {
			mu.Lock()
			c.RV.Expect(out)
			mu.Unlock()
		}
		if err != nil {
			c.Recorder.Eventf(st.ds, corev1.EventTypeWarning, EventFailedInPlaceUpdate, "Failed to update pod %s in place: %v", p.Name, err)
			return fmt.Errorf("update pod %s in place: %w", p.Name, err)
		}
		c.Recorder.Eventf(st.ds, corev1.EventTypeNormal, EventSuccessfulInPlace, "Updated pod %s in place to revision %s", p.Name, st.hash)
		return nil
	})
	return recreate, err
}

// refreshPods gives scheduled pods with our readiness gates their first
// True conditions (without them the pod never becomes Ready) and advances the in-place updates in progress (next batch,
// completion: InPlaceUpdateReady back to True). It reports whether it wrote.
func (c *Controller) refreshPods(ctx context.Context, st *syncState) (bool, error) {
	var todo, fresh []*corev1.Pod
	for _, p := range st.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != "" && needsGateInit(p) {
			fresh = append(fresh, p)
			continue
		}
		if _, grace := pub.GetInPlaceUpdateGrace(p); grace || p.Annotations[pub.InPlaceUpdateStateKey] != "" || gateLeftFalse(p) {
			todo = append(todo, p)
		}
	}
	var mu sync.Mutex
	written := false
	err := controller.ForEach(fresh, writeConcurrency, func(p *corev1.Pod) error {
		next := podreadiness.WithGateConditions(p, st.now, gatedConditions...)
		if next == nil {
			return nil
		}
		out, err := c.PodControl.PatchStatus(ctx, p, next)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the kubelet wrote it meanwhile (its event brings us back), or it is gone
		}
		if err != nil {
			return fmt.Errorf("set InPlaceUpdateReady of pod %s: %w", p.Name, err)
		}
		mu.Lock()
		c.RV.Expect(out)
		written = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		return written, err
	}
	err = controller.ForEach(todo, writeConcurrency, func(p *corev1.Pod) error {
		res, err := c.InPlace.Refresh(ctx, p)
		mu.Lock()
		defer mu.Unlock()
		if res.Written && res.Pod != nil {
			c.RV.Expect(res.Pod)
			written = true
		}
		st.requeue.After(res.RequeueAfter)
		if err != nil {
			return fmt.Errorf("refresh in-place update of pod %s: %w", p.Name, err)
		}
		return nil
	})
	return written, err
}
