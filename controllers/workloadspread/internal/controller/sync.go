package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
)

// sync reconciles one WorkloadSpread: gather (caches) → deletion costs →
// status (pure, written only when it changed) → rescheduling deletes.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	ws, err := c.spreads.WorkloadSpreads(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get workloadspread %s: %w", key, err)
	}
	if !spread.Served(ws) {
		return nil
	}
	if ok, wait := c.written.Satisfied(ws); !ok {
		c.Queue.AddAfter(key, wait)
		return nil
	}
	obj, err := c.targets.Get(ctx, ws.Namespace, ws.Spec.TargetReference)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	replicas := int32(0)
	if obj != nil {
		replicas = workload.Replicas(obj)
		if pods, err = workload.Pods(c.pods, c.rsIndex, ws.Spec.TargetReference, obj); err != nil {
			return err
		}
	}
	by := spread.GroupBySubset(ws, pods)
	now := c.Clock.Now()
	if spread.CostKinds(ws.Spec.TargetReference.Kind) {
		if err := c.patchCosts(ctx, ws, pods, spread.DeletionCosts(ws, by, replicas, now)); err != nil {
			return err
		}
	}
	r, err := calculateStatus(ws, by, pods, replicas, now)
	if err != nil {
		return err
	}
	if err := c.writeStatus(ctx, ws, r.status); err != nil {
		return err
	}
	c.recordEvents(ws, r) // once the status is written: a conflict retries without repeating them
	if err := c.deleteUnscheduled(ctx, ws, r.unscheduled); err != nil {
		return err
	}
	if r.next > 0 {
		c.Queue.AddAfter(key, r.next)
	}
	return nil
}
