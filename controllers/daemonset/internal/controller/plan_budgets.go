package controller

import (
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// defaultBurstReplicas caps creates and deletes per sync without
// spec.burstReplicas (upstream's and OpenKruise's 250).
const defaultBurstReplicas = 250

// scaled resolves an int-or-percent against total. A malformed value (not
// possible past the CRD's pattern) counts as 0.
func scaled(v *intstr.IntOrString, total int, roundUp bool) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// burstReplicas is how many pods one sync may create, and how many it may
// delete: spec.burstReplicas (default 250), a percentage of desired rounded
// down. It is never below 1, so that a small percentage of a small
// DaemonSet still makes progress (OpenKruise resolves the percentage against
// the previous status, which is 0 on the first sync, and then creates
// nothing until the status is written).
func burstReplicas(ds *appsv1alpha1.DaemonSet, desired int) int {
	v := ds.Spec.BurstReplicas
	if v == nil {
		d := intstr.FromInt32(defaultBurstReplicas)
		v = &d
	}
	return max(scaled(v, desired, false), 1)
}

// surgeAndUnavailable resolves the rolling update's budgets against the
// number of nodes that should run the daemon, as upstream does: both round
// up; an absent value is 0, except that with neither given the default is
// maxUnavailable 1, and that the deprecated Surging type (Standard with
// another default) has maxSurge 1 when it is absent, as OpenKruise's
// defaulting gives it. Admission rejects budgets that resolve to both 0
// ("cannot be 0 when maxSurge is 0"); for an object stored before that
// rule, both 0 with nodes to update means maxUnavailable 1, so that the
// update can progress. OnDelete has no budget.
func surgeAndUnavailable(ds *appsv1alpha1.DaemonSet, desired int) (maxSurge, maxUnavailable int) {
	ru := rollingUpdate(ds)
	if ru == nil {
		return 0, 0
	}
	surge, unavailable := ru.MaxSurge, ru.MaxUnavailable
	one := intstr.FromInt32(1)
	switch {
	case surge == nil && ru.Type == appsv1alpha1.SurgingRollingUpdateType:
		surge = &one
	case surge == nil && unavailable == nil:
		unavailable = &one
	}
	maxSurge, maxUnavailable = scaled(surge, desired, true), scaled(unavailable, desired, true)
	if ru.Type == appsv1alpha1.InplaceRollingUpdateType {
		maxSurge = 0 // rejected at admission; never surge next to an in-place update
	}
	if desired > 0 && maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

// partition is the number of nodes whose pods stay at their old revision:
// rollingUpdate.partition, a percentage of desired rounded down.
func partition(ds *appsv1alpha1.DaemonSet, desired int) int {
	ru := rollingUpdate(ds)
	if ru == nil {
		return 0
	}
	return scaled(ru.Partition, desired, false)
}

// paused: rollingUpdate.paused stops the rolling update (only: placement on
// new nodes and status go on).
func paused(ds *appsv1alpha1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Paused != nil && *ru.Paused
}

// progressive: annotation daemonset.kruise.io/progressive-create-pod=true
// makes the partition also hold back pods on nodes that have none yet.
func progressive(ds *appsv1alpha1.DaemonSet) bool {
	return ds.Annotations[pub.DaemonSetProgressiveCreatePodKey] == "true"
}
