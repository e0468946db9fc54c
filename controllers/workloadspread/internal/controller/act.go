package controller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
)

// patchCosts writes each pod's pod-deletion-cost where it differs, as a
// patch of the difference through PodControl.
func (c *Controller) patchCosts(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod, costs map[string]string) error {
	for _, p := range pods {
		cost, ok := costs[p.Name]
		if !ok || !spread.CostPatchNeeded(p, cost) {
			continue
		}
		next := p.DeepCopy()
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[spread.DeletionCostKey] = cost
		if _, err := c.podControl.Patch(ctx, p, next); err != nil {
			c.Recorder.Eventf(ws, corev1.EventTypeWarning, "PatchPodDeletionCostFailed",
				"WorkloadSpread %s/%s failed to patch deletion-cost annotation to %s for Pod %s/%s", ws.Namespace, ws.Name, cost, p.Namespace, p.Name)
			return fmt.Errorf("patch deletion cost of pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// deleteUnscheduled deletes the pods a subset could not place, so that the
// workload recreates them and the webhook puts them in the next subset.
func (c *Controller) deleteUnscheduled(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, pods []*corev1.Pod) error {
	for _, p := range pods {
		if err := c.podControl.Delete(ctx, p, nil); err != nil {
			c.Recorder.Eventf(ws, corev1.EventTypeWarning, "DeletePodFailed", "Failed to delete unschedulable Pod %s/%s of WorkloadSpread %s/%s",
				p.Namespace, p.Name, ws.Namespace, ws.Name)
			return fmt.Errorf("delete unschedulable pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// recordEvents records what calculateStatus reported.
func (c *Controller) recordEvents(ws *appsv1alpha1.WorkloadSpread, r result) {
	for _, m := range []struct {
		typ    string
		events map[string][]string
	}{{corev1.EventTypeWarning, r.warnings}, {corev1.EventTypeNormal, r.normals}} {
		reasons := make([]string, 0, len(m.events))
		for k := range m.events {
			reasons = append(reasons, k)
		}
		sort.Strings(reasons)
		for _, reason := range reasons {
			for _, msg := range m.events[reason] {
				c.Recorder.Event(ws, m.typ, reason, msg)
			}
		}
	}
}
