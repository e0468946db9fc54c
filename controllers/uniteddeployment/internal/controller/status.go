package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// PodCounts are the pods of one subset at the UnitedDeployment's update revision.
type PodCounts struct {
	Updated      int32 // active (not terminating, not finished)
	UpdatedReady int32 // of those, ready
}

// CountUpdated counts the active pods labelled with revision, and the ready ones among them.
func CountUpdated(pods []*corev1.Pod, revision string) PodCounts {
	var c PodCounts
	for _, p := range pods {
		if p.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey] != revision || !podutil.IsActive(p) {
			continue
		}
		c.Updated++
		if podutil.IsReady(p) {
			c.UpdatedReady++
		}
	}
	return c
}

// StatusInput is everything a sync learned that the status reports.
type StatusInput struct {
	Subsets        map[string]Observed // the subset workloads of the topology that exist, by subset name
	Pods           map[string]PodCounts
	NextReplicas   map[string]int32
	NextPartitions map[string]int32
	// CurrentRevision is status.currentRevision when that revision still exists, else UpdateRevision.
	CurrentRevision string
	UpdateRevision  string
	CollisionCount  *int32
	Selector        string
	// Provisioned: subset workloads were created or deleted; ProvisionErr: creating or deleting one failed.
	Provisioned  bool
	ProvisionErr error
	// UpdateErr: updating a subset workload failed.
	UpdateErr error
	Now       metav1.Time
	// SubsetConditions replace the conditions of the subsets they name (the Adaptive strategy's Schedulable).
	SubsetConditions map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition
}

// CalculateStatus returns ud's new status (ud is not modified), computed as OpenKruise does: totals over the
// subset workloads, the updated pods counted by the UnitedDeployment revision label, currentRevision moved to the
// update revision once every pod of it is ready, and the conditions.
func CalculateStatus(ud *appsv1alpha1.UnitedDeployment, in StatusInput) appsv1alpha1.UnitedDeploymentStatus {
	old := &ud.Status
	st := appsv1alpha1.UnitedDeploymentStatus{
		ObservedGeneration: ud.Generation,
		CurrentRevision:    old.CurrentRevision,
		CollisionCount:     in.CollisionCount,
		SubsetReplicas:     in.NextReplicas,
		LabelSelector:      in.Selector,
		Conditions:         slices.Clone(old.Conditions),
	}
	for _, s := range ud.Spec.Topology.Subsets {
		ss := appsv1alpha1.UnitedDeploymentSubsetStatus{Name: s.Name, Partition: in.NextPartitions[s.Name]}
		if conds, ok := in.SubsetConditions[s.Name]; ok {
			ss.Conditions = conds
		} else if prev := subsetStatus(old, s.Name); prev != nil {
			ss.Conditions = prev.Conditions
		}
		if o, ok := in.Subsets[s.Name]; ok {
			ss.Replicas, ss.ReadyReplicas = o.Replicas, o.ReadyReplicas
			st.Replicas += o.Replicas
			st.ReadyReplicas += o.ReadyReplicas
			st.UpdatedReplicas += in.Pods[s.Name].Updated
			st.UpdatedReadyReplicas += in.Pods[s.Name].UpdatedReady
		}
		st.SubsetStatuses = append(st.SubsetStatuses, ss)
	}
	if st.CurrentRevision == "" {
		st.CurrentRevision = in.CurrentRevision
	}
	st.UpdateStatus = &appsv1alpha1.UpdateStatus{UpdatedRevision: in.UpdateRevision, CurrentPartitions: in.NextPartitions}
	if st.CurrentRevision != in.UpdateRevision && st.UpdatedReadyReplicas >= st.Replicas {
		st.CurrentRevision = in.UpdateRevision
	}

	updated := condition(appsv1alpha1.UnitedDeploymentUpdated, corev1.ConditionTrue, "UnitedDeploymentRevisionUpdated",
		fmt.Sprintf("updated to revision %s", in.UpdateRevision), in.Now)
	if in.CurrentRevision != in.UpdateRevision {
		updated = condition(appsv1alpha1.UnitedDeploymentUpdated, corev1.ConditionFalse, "UnitedDeploymentRevisionUpdating",
			fmt.Sprintf("updating to revision %s", in.UpdateRevision), in.Now)
	}
	setCondition(&st, updated)
	switch {
	case in.ProvisionErr != nil:
		setCondition(&st, condition(appsv1alpha1.SubsetProvisioned, corev1.ConditionFalse, "Error", in.ProvisionErr.Error(), in.Now))
	case in.Provisioned:
		setCondition(&st, condition(appsv1alpha1.SubsetProvisioned, corev1.ConditionTrue, "", "", in.Now))
	}
	// Updates are only tried once provisioning succeeded, as in OpenKruise.
	if in.ProvisionErr == nil {
		if in.UpdateErr != nil {
			setCondition(&st, condition(appsv1alpha1.SubsetUpdated, corev1.ConditionFalse, "Error", in.UpdateErr.Error(), in.Now))
		} else {
			setCondition(&st, condition(appsv1alpha1.SubsetUpdated, corev1.ConditionTrue, "", "", in.Now))
		}
	}
	// No subset kind reports a failure (OpenKruise's adapters report none either): a stale one is removed.
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c appsv1alpha1.UnitedDeploymentCondition) bool {
		return c.Type == appsv1alpha1.SubsetFailure
	})
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	return st
}

func subsetStatus(st *appsv1alpha1.UnitedDeploymentStatus, name string) *appsv1alpha1.UnitedDeploymentSubsetStatus {
	for i := range st.SubsetStatuses {
		if st.SubsetStatuses[i].Name == name {
			return &st.SubsetStatuses[i]
		}
	}
	return nil
}

func condition(t appsv1alpha1.UnitedDeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) appsv1alpha1.UnitedDeploymentCondition {
	return appsv1alpha1.UnitedDeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
}

// setCondition sets c as OpenKruise does: a condition of the same status and reason is left as it is (message
// included); one of the same status keeps its transition time; the new one goes last.
func setCondition(st *appsv1alpha1.UnitedDeploymentStatus, c appsv1alpha1.UnitedDeploymentCondition) {
	i := slices.IndexFunc(st.Conditions, func(x appsv1alpha1.UnitedDeploymentCondition) bool { return x.Type == c.Type })
	if i >= 0 {
		cur := st.Conditions[i]
		if cur.Status == c.Status && cur.Reason == c.Reason {
			return
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
		st.Conditions = slices.Delete(st.Conditions, i, i+1)
	}
	st.Conditions = append(st.Conditions, c)
}

func selectorString(ud *appsv1alpha1.UnitedDeployment) string {
	sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}

// reportUnsupported reports a template whose kind the API server does not serve: a Warning event, and
// SubsetProvisioned=False in the status.
func (c *Controller) reportUnsupported(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, kind Kind) error {
	// The API server's rules require one template; its kind may still not be served (e.g. no CloneSet CRD).
	msg := fmt.Sprintf("subset kind %q is not served by the API server", kind)
	c.Recorder.Event(ud, corev1.EventTypeWarning, reasonUnsupportedSubset, msg)
	return c.writeStatus(ctx, ud, c.unsupportedStatus(ud, msg))
}

// unsupportedStatus is ud's status when its subset kind is not served: SubsetProvisioned=False with msg.
func (c *Controller) unsupportedStatus(ud *appsv1alpha1.UnitedDeployment, msg string) appsv1alpha1.UnitedDeploymentStatus {
	st := *ud.Status.DeepCopy()
	st.ObservedGeneration = ud.Generation
	setCondition(&st, condition(appsv1alpha1.SubsetProvisioned, corev1.ConditionFalse, "Error", msg, metav1.NewTime(c.Clock.Now())))
	return st
}

// writeStatus writes st unless ud already has it.
func (c *Controller) writeStatus(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, st appsv1alpha1.UnitedDeploymentStatus) error {
	statusOf := func(u *appsv1alpha1.UnitedDeployment) *appsv1alpha1.UnitedDeploymentStatus { return &u.Status }
	if _, err := kitcontroller.WriteStatus(ctx, c.Client.AppsV1alpha1().UnitedDeployments(ud.Namespace), ud, statusOf, st, c.written); err != nil {
		return fmt.Errorf("update status of UnitedDeployment %s/%s: %w", ud.Namespace, ud.Name, err)
	}
	return nil
}
