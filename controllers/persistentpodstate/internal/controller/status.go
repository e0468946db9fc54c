package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// ConditionInjected is False once a pod was recreated without the topology
// its record gave (the pod webhook was not called: down with failurePolicy
// Ignore, or out of scope), True once a recreated pod carried it.
const ConditionInjected = "PersistentTopologyInjected"

// Reasons of ConditionInjected, and of the Warning event for each such pod.
const (
	ReasonNotInjected = "PodCreatedWithoutPersistentTopology"
	ReasonInjected    = "PodCreatedWithPersistentTopology"
)

// calculateStatus is the status to write: the records, the generation, and
// ConditionInjected moved by what this sync saw (kept otherwise; other
// conditions, e.g. the webhook's WebhookInScope, kept as they are).
func calculateStatus(old *appsv1alpha1.PersistentPodStateStatus, generation int64, r records, now metav1.Time) appsv1alpha1.PersistentPodStateStatus {
	st := appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: generation, PodStates: r.states,
		Conditions: append([]metav1.Condition(nil), old.Conditions...)}
	if len(st.PodStates) == 0 {
		st.PodStates = nil
	}
	c := metav1.Condition{Type: ConditionInjected, ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case len(r.missed) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNotInjected, missedMessage(r.missed)
	case r.injected:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonInjected, "recreated pods carry their recorded topology"
	default:
		return st
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}

func missedMessage(missed []missedPod) string {
	parts := make([]string, len(missed))
	for i, m := range missed {
		parts[i] = fmt.Sprintf("%s runs on %s, recorded on %s", m.Pod, m.Node, m.RecordedNode)
	}
	return "pods created without their recorded topology (the pod webhook was not called or failed): " + strings.Join(parts, "; ")
}

// updateStatus writes st if it differs from the cached status (the cached
// object's resourceVersion: a conflict retries on a fresher cache).
func (c *Controller) updateStatus(ctx context.Context, pps *appsv1alpha1.PersistentPodState, st appsv1alpha1.PersistentPodStateStatus) error {
	if equality.Semantic.DeepEqual(pps.Status, st) {
		return nil
	}
	upd := pps.DeepCopy()
	upd.Status = st
	if _, err := c.Client.AppsV1alpha1().PersistentPodStates(pps.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of PersistentPodState %s/%s: %w", pps.Namespace, pps.Name, err)
	}
	return nil
}
