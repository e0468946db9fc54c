package podutil

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// IsTerminating reports whether the pod has been asked to go away: its
// deletionTimestamp is set (it may still be running its grace period).
func IsTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// IsActive reports whether the pod still counts towards its workload's
// replicas: it is not terminating and has not finished (phase is neither
// Succeeded nor Failed).
func IsActive(pod *corev1.Pod) bool {
	if IsTerminating(pod) {
		return false
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	return true
}

// GetCondition returns the pod's condition of the given type, or nil. The
// result points into the pod; do not modify it.
func GetCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	conds := pod.Status.Conditions
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// Container returns the pod's container (spec.containers) called name, or
// nil. The result points into the pod; do not modify it.
func Container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// ContainerStatus returns the status of the pod's container called name
// (status.containerStatuses), or nil. The result points into the pod; do
// not modify it.
func ContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True. The phase is
// not looked at; see IsRunningAndReady.
func IsReady(pod *corev1.Pod) bool {
	c := GetCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsRunningAndReady reports whether the pod is in phase Running and its
// Ready condition is True.
func IsRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && IsReady(pod)
}

// IsActiveAndReady reports whether the pod is Running, its Ready condition
// is True, and it is not terminating: a pod that serves and is not on its
// way out (SidecarSet's, Advanced StatefulSet's and PUB's "ready").
func IsActiveAndReady(pod *corev1.Pod) bool {
	return !IsTerminating(pod) && IsRunningAndReady(pod)
}

// IsInPlaceUpdateReady reports whether the pod has no InPlaceUpdateReady
// condition or has it True: no in-place update holds it back. A condition
// that is False or Unknown does.
func IsInPlaceUpdateReady(pod *corev1.Pod) bool {
	c := GetCondition(pod, pub.InPlaceUpdateReady)
	return c == nil || c.Status == corev1.ConditionTrue
}

// IsInPlaceUpdateNotReady reports whether the pod's InPlaceUpdateReady
// condition is False: an in-place update has started (the workload turned it
// False before changing the spec). It is not the negation of
// IsInPlaceUpdateReady: an Unknown condition is neither.
func IsInPlaceUpdateNotReady(pod *corev1.Pod) bool {
	c := GetCondition(pod, pub.InPlaceUpdateReady)
	return c != nil && c.Status == corev1.ConditionFalse
}

// IsWorkloadReady is readiness as CloneSet counts readyReplicas: Running,
// Ready, and not IsInPlaceUpdateNotReady. An Unknown InPlaceUpdateReady does
// not make the pod unready here (only IsWorkloadAvailable is that strict).
func IsWorkloadReady(pod *corev1.Pod) bool {
	return IsRunningAndReady(pod) && !IsInPlaceUpdateNotReady(pod)
}

// IsInPlaceUpdateCompleted reports whether the in-place update recorded on
// the pod (apps.kruise.io/inplace-update-state) has finished on its
// containers (inplace.UpdateCompleted); a pod with no recorded update has.
// An annotation that does not decode is never completed: what the update
// changed is unknown. A grace annotation without a recorded state is not
// looked at.
func IsInPlaceUpdateCompleted(pod *corev1.Pod) bool {
	state, err := inplace.DecodeState(pod)
	return err == nil && inplace.UpdateCompleted(pod, state)
}

// ReadySince returns when the pod last became ready — the lastTransitionTime
// of its Ready condition — and true, if the pod is ready. A ready pod whose
// condition carries no transition time yields the zero time and true. A pod
// that is not ready yields the zero time and false.
func ReadySince(pod *corev1.Pod) (time.Time, bool) {
	c := GetCondition(pod, corev1.PodReady)
	if c == nil || c.Status != corev1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// IsAvailable reports whether the pod has been ready for at least
// minReadySeconds at now. With minReadySeconds <= 0 every ready pod is
// available; otherwise a ready pod without a Ready transition time is not
// (its readiness cannot be dated).
//
// This is readiness-based availability only. Workloads that honour
// lifecycle hooks also require IsLifecycleNormal; see IsWorkloadAvailable.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	since, ready := ReadySince(pod)
	return ready && readyLongEnough(since, minReadySeconds, now)
}

func readyLongEnough(since time.Time, minReadySeconds int32, now time.Time) bool {
	if minReadySeconds <= 0 {
		return true
	}
	if since.IsZero() {
		return false
	}
	// Strictly longer than minReadySeconds, as Kubernetes counts availability.
	return since.Add(time.Duration(minReadySeconds) * time.Second).Before(now)
}

// IsSpecifiedDelete reports whether the pod carries the label
// apps.kruise.io/specified-delete, with any value (even empty).
func IsSpecifiedDelete(pod *corev1.Pod) bool {
	_, ok := pod.Labels[pub.SpecifiedDeleteKey]
	return ok
}

// DeletionCost returns the pod's controller.kubernetes.io/pod-deletion-cost
// annotation as an int32. A missing or invalid value yields 0. Valid values
// are what Kubernetes' own controllers accept: a base-10 integer in int32
// range, either negative ('-' then digits) or without sign, '+' or leading
// zeros ("0", "42"; not "+1", "007", " 1").
func DeletionCost(pod *corev1.Pod) int32 {
	v, ok := pod.Annotations[pub.PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	c, _ := parseDeletionCost(v)
	return c
}

// parseDeletionCost parses s without allocating (strconv allocates its error
// on bad input, and SortForDeletion calls this for every pod).
func parseDeletionCost(s string) (int32, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || (!neg && s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	const limit = 1 << 31 // |MinInt32|
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
		if n > limit {
			return 0, false
		}
	}
	if neg {
		return int32(-n), true
	}
	if n == limit {
		return 0, false
	}
	return int32(n), true
}

// IsLifecycleNormal reports whether the pod's lifecycle state is empty or
// Normal. Any other state (PreparingNormal, PreparingUpdate, Updating,
// Updated, PreparingDelete) makes the pod unavailable for CloneSet and
// Advanced StatefulSet status and maxUnavailable accounting.
func IsLifecycleNormal(pod *corev1.Pod) bool {
	s := pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
	return s == "" || s == pub.LifecycleStateNormal
}

// IsWorkloadAvailable is availability as OpenKruise's CloneSet counts it:
// phase Running, ready for minReadySeconds (IsAvailable), lifecycle state
// empty or Normal, and — when the pod has an InPlaceUpdateReady condition —
// that condition True, so a pod whose in-place update has not finished is
// not available even while the kubelet still reports it Ready. With
// minReadySeconds 0 it is the "ready" OpenKruise limits deletions with.
func IsWorkloadAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return pod.Status.Phase == corev1.PodRunning && IsAvailable(pod, minReadySeconds, now) &&
		IsLifecycleNormal(pod) && IsInPlaceUpdateReady(pod)
}

// AddReadinessGate adds readiness gate t to pod (being built, not from a
// cache) unless it is there already.
func AddReadinessGate(pod *corev1.Pod, t corev1.PodConditionType) {
	if !slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == t }) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
}

// SetClaimVolume makes the pod's (being built, not from a cache) volume
// named volume the claim claimName, replacing a template volume of that name
// or adding it — as workloads do for each volumeClaimTemplate.
func SetClaimVolume(pod *corev1.Pod, volume, claimName string) {
	vol := corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
	}}
	if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume }); i >= 0 {
		pod.Spec.Volumes[i] = vol
	} else {
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
	}
}
