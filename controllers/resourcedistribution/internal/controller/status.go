package controller

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// conditionOrder is OpenKruise's: status.conditions always lists these six types in this order.
var conditionOrder = []appsv1alpha1.ResourceDistributionConditionType{
	appsv1alpha1.ResourceDistributionGetResourceFailed,
	appsv1alpha1.ResourceDistributionCreateResourceFailed,
	appsv1alpha1.ResourceDistributionUpdateResourceFailed,
	appsv1alpha1.ResourceDistributionDeleteResourceFailed,
	appsv1alpha1.ResourceDistributionConflictOccurred,
	appsv1alpha1.ResourceDistributionNamespaceNotExists,
}

// OpenKruise's reasons for the two failures that are not API errors, and for a condition that is False.
const (
	reasonSucceeded = "Succeeded"
	reasonConflict  = "conflict with existing resources because of the same namespace, group, version, kind and name"
	reasonNotExist  = "namespace not found or is terminating"
)

// outcome is what happened in one namespace.
type outcome struct {
	ns string
	// ok: the namespace holds an up-to-date copy (a target) or no longer holds ours (a deletion).
	ok bool
	// failed is the condition type when not ok and the namespace failed; empty for a deferred namespace.
	failed appsv1alpha1.ResourceDistributionConditionType
	reason string
	target bool
}

// calculateStatus is the status after a sync: desired is the number of targets, succeeded the targets whose
// copy is up to date, failed the rest (failures and namespaces deferred to the next sync); each condition lists
// the namespaces failing that way, sorted, with the message of the first. A condition keeps its
// lastTransitionTime while its status does not change.
func calculateStatus(old *appsv1alpha1.ResourceDistributionStatus, generation int64, desired int, outcomes []outcome, now metav1.Time) appsv1alpha1.ResourceDistributionStatus {
	st := appsv1alpha1.ResourceDistributionStatus{Desired: int32(desired), ObservedGeneration: generation}
	failed := map[appsv1alpha1.ResourceDistributionConditionType][]outcome{}
	for _, o := range outcomes {
		if o.ok && o.target {
			st.Succeeded++
		}
		if !o.ok && o.failed != "" {
			failed[o.failed] = append(failed[o.failed], o)
		}
	}
	st.Failed = st.Desired - st.Succeeded
	for _, t := range conditionOrder {
		c := appsv1alpha1.ResourceDistributionCondition{Type: t, Status: appsv1alpha1.ResourceDistributionConditionFalse, Reason: reasonSucceeded}
		if fs := failed[t]; len(fs) > 0 {
			slices.SortFunc(fs, func(a, b outcome) int {
				if a.ns < b.ns {
					return -1
				}
				if a.ns > b.ns {
					return 1
				}
				return 0
			})
			c.Status, c.Reason = appsv1alpha1.ResourceDistributionConditionTrue, fs[0].reason
			for _, f := range fs {
				c.FailedNamespaces = append(c.FailedNamespaces, f.ns)
			}
		}
		c.LastTransitionTime = now
		for _, oc := range old.Conditions {
			if oc.Type == t && oc.Status == c.Status {
				c.LastTransitionTime = oc.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// updateStatus writes st unless rd already has it. A distribution deleted meanwhile is not an error: its copies
// go with it.
func (c *Controller) updateStatus(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, st appsv1alpha1.ResourceDistributionStatus) error {
	statusOf := func(r *appsv1alpha1.ResourceDistribution) *appsv1alpha1.ResourceDistributionStatus { return &r.Status }
	wrote, err := controller.WriteStatus(ctx, c.Client.AppsV1alpha1().ResourceDistributions(), rd, statusOf, st, c.written)
	switch {
	case apierrors.IsNotFound(err):
		// Deleted meanwhile: its copies go with it.
	case err != nil:
		return fmt.Errorf("update status of ResourceDistribution %s: %w", rd.Name, err)
	case wrote:
		klog.FromContext(ctx).V(2).Info("Updated status", "desired", st.Desired, "succeeded", st.Succeeded, "failed", st.Failed)
	}
	return nil
}
