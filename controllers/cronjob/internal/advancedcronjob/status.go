package advancedcronjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// lastScheduled is the latest scheduled time known from any source: the status, the children's scheduled-at
// annotations, and remembered (what this process created and its cache may not show yet). Taking the maximum is
// what keeps a restarted controller, or one whose status write was lost, from running a slot twice.
func lastScheduled(acj *appsv1alpha1.AdvancedCronJob, cs []child, remembered time.Time) time.Time {
	last := remembered
	if acj.Status.LastScheduleTime != nil && acj.Status.LastScheduleTime.After(last) {
		last = acj.Status.LastScheduleTime.Time
	}
	for _, c := range cs {
		if c.ScheduledAt.After(last) {
			last = c.ScheduledAt
		}
	}
	return last
}

// calculateStatus is the status acj should show given its children and whether its schedule parses (schedErr);
// it reads nothing else. now stamps a condition that changes.
func calculateStatus(acj *appsv1alpha1.AdvancedCronJob, cs []child, remembered time.Time, schedErr error, now time.Time) appsv1alpha1.AdvancedCronJobStatus {
	st := appsv1alpha1.AdvancedCronJobStatus{Type: templateKind(acj), Conditions: scheduleCondition(acj, schedErr, now)}
	for _, c := range active(cs) {
		st.Active = append(st.Active, c.ref(acj.Namespace))
	}
	if last := lastScheduled(acj, cs, remembered); !last.IsZero() {
		st.LastScheduleTime = &metav1.Time{Time: last.Truncate(time.Second)}
	}
	return st
}

// scheduleCondition returns acj's conditions with ScheduleValid set from schedErr. The existing conditions are
// copied (never modified in the cache); an unchanged condition keeps its lastTransitionTime.
func scheduleCondition(acj *appsv1alpha1.AdvancedCronJob, schedErr error, now time.Time) []metav1.Condition {
	conds := append([]metav1.Condition(nil), acj.Status.Conditions...)
	c := metav1.Condition{Type: appsv1alpha1.AdvancedCronJobScheduleValid, Status: metav1.ConditionTrue,
		Reason: "Valid", Message: "schedule and timeZone are usable", ObservedGeneration: acj.Generation,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if schedErr != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reasonInvalidSchedule, schedErr.Error()
		var se *specError
		if errors.As(schedErr, &se) {
			c.Reason = se.Reason
		}
	}
	meta.SetStatusCondition(&conds, c)
	return conds
}

// statusEqual compares at the API's precision: times travel in whole seconds.
func statusEqual(a, b appsv1alpha1.AdvancedCronJobStatus) bool {
	if a.Type != b.Type || len(a.Active) != len(b.Active) || !apiequality.Semantic.DeepEqual(a.Conditions, b.Conditions) {
		return false
	}
	if len(a.Active) > 0 && !apiequality.Semantic.DeepEqual(a.Active, b.Active) {
		return false
	}
	if (a.LastScheduleTime == nil) != (b.LastScheduleTime == nil) {
		return false
	}
	return a.LastScheduleTime == nil || a.LastScheduleTime.Unix() == b.LastScheduleTime.Unix()
}

// statusPatch is a JSON merge patch replacing the three status fields; explicit nulls clear them.
type statusPatch struct {
	Status struct {
		Type             appsv1alpha1.TemplateKind `json:"type"`
		Active           []corev1.ObjectReference  `json:"active"`
		LastScheduleTime *metav1.Time              `json:"lastScheduleTime"`
		Conditions       []metav1.Condition        `json:"conditions"`
	} `json:"status"`
}

// updateStatus writes st if it differs from what the cache shows. It patches rather than updates so that a
// status computed from a slightly stale AdvancedCronJob never fails on a resourceVersion conflict: every field
// it writes is derived from the children, not from the old status alone.
func (c *Controller) updateStatus(ctx context.Context, acj *appsv1alpha1.AdvancedCronJob, st appsv1alpha1.AdvancedCronJobStatus) error {
	if statusEqual(acj.Status, st) {
		return nil
	}
	var p statusPatch
	p.Status.Type, p.Status.Active, p.Status.LastScheduleTime, p.Status.Conditions = st.Type, st.Active, st.LastScheduleTime, st.Conditions
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	_, err = c.Client.AppsV1alpha1().AdvancedCronJobs(acj.Namespace).Patch(ctx, acj.Name, types.MergePatchType, data,
		metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("update status of AdvancedCronJob %s: %w", klog.KObj(acj), err)
	}
	klog.FromContext(ctx).V(4).Info("Updated status", "active", len(st.Active), "lastScheduleTime", st.LastScheduleTime)
	return nil
}
