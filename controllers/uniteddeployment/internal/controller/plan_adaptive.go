package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
)

// Defaults of the Adaptive strategy's durations (OpenKruise's).
const (
	defaultRescheduleCritical = 30 * time.Second
	defaultUnschedulableFor   = 300 * time.Second
)

// adaptiveDurations returns how long a pod may stay pending unscheduled before its subset counts as unschedulable,
// and how long a subset then stays so.
func adaptiveDurations(s appsv1alpha1.UnitedDeploymentScheduleStrategy) (critical, unschedulable time.Duration) {
	critical, unschedulable = defaultRescheduleCritical, defaultUnschedulableFor
	if a := s.Adaptive; a != nil {
		if a.RescheduleCriticalSeconds != nil {
			critical = time.Duration(*a.RescheduleCriticalSeconds) * time.Second
		}
		if a.UnschedulableDuration != nil {
			unschedulable = time.Duration(*a.UnschedulableDuration) * time.Second
		}
	}
	return critical, unschedulable
}

// pendingTimedOut reports whether p has waited unscheduled (condition PodScheduled=False, reason Unschedulable)
// for longer than timeout since its creation; otherwise, for such a pod, how long until it will have.
func pendingTimedOut(p *corev1.Pod, timeout time.Duration, now time.Time) (bool, time.Duration) {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
		return false, 0
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			due := p.CreationTimestamp.Add(timeout)
			if due.Before(now) {
				return true, 0
			}
			return false, due.Sub(now)
		}
	}
	return false, 0
}

// Schedulability is OpenKruise's Adaptive check of one existing subset: a subset marked unschedulable stays so for
// unschedulableDuration after its Schedulable condition turned False, then recovers; a subset with fewer ready
// pods than pods, one of which has waited unscheduled for longer than rescheduleCriticalSeconds, becomes
// unschedulable. It returns the subset's conditions (prev updated; prev is not modified) and when to look again
// (0: no need).
func Schedulability(s appsv1alpha1.UnitedDeploymentScheduleStrategy, prev []appsv1alpha1.UnitedDeploymentSubsetCondition,
	o Observed, pods []*corev1.Pod, now time.Time) (unschedulable bool, conds []appsv1alpha1.UnitedDeploymentSubsetCondition, requeue time.Duration) {
	critical, hold := adaptiveDurations(s)
	conds = append([]appsv1alpha1.UnitedDeploymentSubsetCondition(nil), prev...)
	after := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	if c := subsetCondition(conds, appsv1alpha1.UnitedDeploymentSubsetSchedulable); c != nil && c.Status == corev1.ConditionFalse {
		if recover := c.LastTransitionTime.Add(hold); now.Before(recover) {
			unschedulable = true
			after(recover.Sub(now))
		} else {
			conds = setSubsetCondition(conds, corev1.ConditionTrue, "recover",
				fmt.Sprintf("unschedulable subset recovered after %f seconds", hold.Seconds()), now)
		}
	}
	if o.ReadyReplicas < o.Replicas {
		pending := 0
		for _, p := range pods {
			timedOut, wait := pendingTimedOut(p, critical, now)
			if timedOut {
				pending++
			}
			after(wait)
		}
		if pending > 0 {
			unschedulable = true
			conds = setSubsetCondition(conds, corev1.ConditionFalse, "reschedule", "timeout pending pods found", now)
			after(hold)
		}
	}
	return unschedulable, conds, requeue
}

func subsetCondition(conds []appsv1alpha1.UnitedDeploymentSubsetCondition, t appsv1alpha1.UnitedDeploymentSubsetConditionType) *appsv1alpha1.UnitedDeploymentSubsetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setSubsetCondition sets the Schedulable condition as OpenKruise does: unchanged when status and reason are.
func setSubsetCondition(conds []appsv1alpha1.UnitedDeploymentSubsetCondition, status corev1.ConditionStatus, reason, msg string,
	now time.Time) []appsv1alpha1.UnitedDeploymentSubsetCondition {
	c := subsetCondition(conds, appsv1alpha1.UnitedDeploymentSubsetSchedulable)
	if c != nil && c.Status == status && c.Reason == reason {
		return conds
	}
	if c == nil {
		conds = append(conds, appsv1alpha1.UnitedDeploymentSubsetCondition{Type: appsv1alpha1.UnitedDeploymentSubsetSchedulable})
		c = &conds[len(conds)-1]
	}
	c.Status, c.Reason, c.Message, c.LastTransitionTime = status, reason, msg, metav1.NewTime(now)
	return conds
}

// adaptiveStates runs the Adaptive strategy's schedulability check on each existing subset of the topology: their
// states for Allocate, their new Schedulable conditions for the status (both nil for the Fixed strategy) and when
// to look again (0: no need).
func adaptiveStates(ud *appsv1alpha1.UnitedDeployment, subsets map[string]Observed, podsOf func(Observed) []*corev1.Pod,
	now time.Time) (map[string]SubsetState, map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition, time.Duration) {
	strategy := ud.Spec.Topology.ScheduleStrategy
	if strategy.Type != appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType {
		return nil, nil, 0
	}
	states := map[string]SubsetState{}
	conds := map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition{}
	var requeue kitcontroller.Requeue
	for _, s := range ud.Spec.Topology.Subsets {
		o, ok := subsets[s.Name]
		if !ok {
			continue // a subset not created yet is schedulable
		}
		var prev []appsv1alpha1.UnitedDeploymentSubsetCondition
		if ss := subsetStatus(&ud.Status, s.Name); ss != nil {
			prev = ss.Conditions
		}
		unschedulable, cs, after := Schedulability(strategy, prev, o, podsOf(o), now)
		states[s.Name] = SubsetState{ReadyReplicas: o.ReadyReplicas, Unschedulable: unschedulable}
		conds[s.Name] = cs
		requeue.After(after)
	}
	return states, conds, requeue.Earliest()
}
