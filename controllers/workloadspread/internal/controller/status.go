package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/kit/controller"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// PodsPlacedCondition is True while every pod of the workload created
// since the webhook's scope covered the WorkloadSpread carries its subset;
// False (WebhookMissed) names pods created without it (the webhook was
// down with failurePolicy Ignore). Flotilla's; OpenKruise has none.
const PodsPlacedCondition = "PodsPlaced"

// result is what calculateStatus decides beside the status.
type result struct {
	status appsv1alpha1.WorkloadSpreadStatus
	// unscheduled are the pods to delete (Adaptive rescheduling).
	unscheduled []*corev1.Pod
	// events to record: reason → messages.
	warnings, normals map[string][]string
	// next is when to look again (0: on events only).
	next time.Duration
}

// calculateStatus is the WorkloadSpread's status for the workload's pods
// grouped by subset (spread.GroupBySubset) and its replicas, as OpenKruise
// computes it, with the WebhookInScope condition kept and PodsPlaced set.
func calculateStatus(ws *appsv1alpha1.WorkloadSpread, by map[string][]*corev1.Pod, all []*corev1.Pod, replicas int32, now time.Time) (result, error) {
	r := result{warnings: map[string][]string{}, normals: map[string][]string{}}
	r.status.ObservedGeneration = ws.Generation
	r.status.Conditions = append([]metav1.Condition(nil), ws.Status.Conditions...)
	old := map[string]*appsv1alpha1.WorkloadSpreadSubsetStatus{}
	for i := range ws.Status.SubsetStatuses {
		old[ws.Status.SubsetStatuses[i].Name] = &ws.Status.SubsetStatuses[i]
	}
	soon := func(d time.Duration) {
		if d > 0 && (r.next == 0 || d < r.next) {
			r.next = d
		}
	}
	critical := time.Duration(spread.RescheduleSeconds(ws)) * time.Second
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		sr, err := spread.SubsetStatus(s, by[s.Name], old[s.Name], replicas, now)
		if err != nil {
			return result{}, fmt.Errorf("subset %s: %w", s.Name, err)
		}
		soon(sr.Next)
		for _, p := range sr.ExpiredCreating {
			r.warnings["CreatePodFailed"] = append(r.warnings["CreatePodFailed"], fmt.Sprintf("Pod %s/%s was expected to be created but it wasn't", ws.Namespace, p))
		}
		for _, p := range sr.ExpiredDeleting {
			r.warnings["DeletePodFailed"] = append(r.warnings["DeletePodFailed"], fmt.Sprintf("Pod %s/%s was expected to be deleted but it wasn't", ws.Namespace, p))
		}
		st := &sr.Status
		switch {
		case critical == 0:
			spread.RemoveSchedulable(st)
		case i == len(ws.Spec.Subsets)-1:
			// The last subset takes what the others cannot: always
			// schedulable, as in OpenKruise.
			spread.Schedulability(st, false, now.Add(spread.MaxScheduledFailedDuration))
		default:
			stuck, wait := spread.Unscheduled(by[s.Name], critical, now)
			soon(wait)
			r.unscheduled = append(r.unscheduled, stuck...)
			recover, recovered := spread.Schedulability(st, len(stuck) > 0, now)
			soon(recover)
			if recovered {
				r.normals["RecoverSchedulable"] = append(r.normals["RecoverSchedulable"], fmt.Sprintf(
					"Subset %s of WorkloadSpread %s/%s is recovered from unschedulable to schedulable", s.Name, ws.Namespace, ws.Name))
			}
		}
		r.status.SubsetStatuses = append(r.status.SubsetStatuses, *st)
	}
	r.status.Conditions = placedCondition(ws, r.status.Conditions, all, now, r.warnings)
	return r, nil
}

// placedCondition sets PodsPlaced from the pods the webhook missed since
// it was in scope (not before: then nothing is known).
func placedCondition(ws *appsv1alpha1.WorkloadSpread, conds []metav1.Condition, pods []*corev1.Pod, now time.Time, warnings map[string][]string) []metav1.Condition {
	in := meta.FindStatusCondition(conds, kitwebhook.InScopeCondition)
	if in == nil || in.Status != metav1.ConditionTrue {
		return conds
	}
	c := metav1.Condition{Type: PodsPlacedCondition, Status: metav1.ConditionTrue, Reason: "Placed", ObservedGeneration: ws.Generation,
		Message: "every pod created since the webhook was in scope carries its subset", LastTransitionTime: metav1.NewTime(now)}
	if missed := spread.Missed(ws, pods, in.LastTransitionTime.Time); len(missed) > 0 {
		names := missed
		if len(names) > 5 {
			names = names[:5]
		}
		c.Status, c.Reason = metav1.ConditionFalse, "WebhookMissed"
		c.Message = fmt.Sprintf("%d pod(s) of the workload were created without the WorkloadSpread webhook (down, failurePolicy Ignore) and are in no subset: %s",
			len(missed), strings.Join(names, ", "))
		warnings["WebhookMissed"] = append(warnings["WebhookMissed"], c.Message)
	}
	meta.SetStatusCondition(&conds, c)
	return conds
}

// writeStatus writes next unless the cached object already has it; a
// conflict (the webhook wrote since) retries the sync on a fresher cache.
func (c *Controller) writeStatus(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, next appsv1alpha1.WorkloadSpreadStatus) error {
	_, err := controller.WriteStatus(ctx, c.Client.AppsV1alpha1().WorkloadSpreads(ws.Namespace), ws,
		func(w *appsv1alpha1.WorkloadSpread) *appsv1alpha1.WorkloadSpreadStatus { return &w.Status }, next, c.written)
	if err != nil {
		return fmt.Errorf("update status of workloadspread %s/%s: %w", ws.Namespace, ws.Name, err)
	}
	return nil
}
