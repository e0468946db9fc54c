package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
)

// ConditionType is the pod condition set (False) on a pod that asks for launch priorities but was created
// without the barrier; ReasonNotInjected is its reason and the reason of the Warning event.
const (
	ConditionType     corev1.PodConditionType = "ContainerLaunchBarrier"
	ReasonNotInjected                         = "BarrierNotInjected"
)

// plan is what one sync does for a pod, decided from the cached pod and barrier.
type plan struct {
	// Report: the pod asks for launch priorities but carries no barrier env (its webhook was not called), and
	// has not been reported yet.
	Report bool
	// Stale: the ConfigMap "<pod>-barrier" belongs to an earlier pod of the same name (a recreated StatefulSet
	// pod): its keys are not this pod's, delete it before creating this pod's.
	Stale bool
	// Create: no barrier yet; it is created holding Open.
	Create bool
	// Open is the key to add ("" when none); Complete marks the pod done after that (barrier.NextKey).
	Open     string
	Complete bool
}

// planPod decides the next step for pod given its cached barrier (nil when the cache has none). A pod whose
// containers are all ready (ContainersReady) needs nothing, as in OpenKruise.
func planPod(pod *corev1.Pod, cm *corev1.ConfigMap) plan {
	if !barrier.HasBarrier(pod) {
		return plan{Report: barrier.Wanted(pod) != nil && !hasCondition(pod, ConditionType)}
	}
	if barrier.ContainersReady(pod) {
		return plan{}
	}
	if cm != nil && !ownedBy(cm, pod.UID) {
		return plan{Stale: true}
	}
	var have map[string]string
	if cm != nil {
		have = cm.Data
	}
	next := barrier.NextKey(pod, have)
	return plan{Create: cm == nil && next.Open != "", Open: next.Open, Complete: next.Complete}
}

func ownedBy(cm *corev1.ConfigMap, uid types.UID) bool {
	for _, ref := range cm.OwnerReferences {
		if ref.Kind == "Pod" && ref.UID == uid {
			return true
		}
	}
	return false
}

func hasCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
