package pubcontrol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// Exemption says why an operation on a pod needs no budget ("" when it
// does).
type Exemption string

const (
	NotExempt          Exemption = ""
	ExemptNoProtect    Exemption = "pod annotated pub.kruise.io/no-protect"
	ExemptNotAvailable Exemption = "pod terminating, not ready or not consistent: it does not count as available"
	ExemptNoDesired    Exemption = "the budget's desiredAvailable is 0"
	ExemptOperation    Exemption = "operation not protected by the budget"
	ExemptRecorded     Exemption = "pod already recorded in the budget's status"
)

// Exempt decides whether op on pod can go without taking from p's budget,
// in OpenKruise's order.
func Exempt(pod *corev1.Pod, p *policyv1alpha1.PodUnavailableBudget, op policyv1alpha1.PubOperation, verticalScaling bool) Exemption {
	switch {
	case NoProtect(pod):
		return ExemptNoProtect
	case !Available(pod):
		return ExemptNotAvailable
	case p.Status.DesiredAvailable == 0:
		return ExemptNoDesired
	case !ProtectOperations(p, verticalScaling).Has(op):
		return ExemptOperation
	case recorded(p, pod.Name):
		return ExemptRecorded
	}
	return NotExempt
}

func recorded(p *policyv1alpha1.PodUnavailableBudget, name string) bool {
	_, d := p.Status.DisruptedPods[name]
	_, u := p.Status.UnavailablePods[name]
	return d || u
}

// OpenKruiseExhausted is OpenKruise's wording for a spent budget, kept at
// the end of Flotilla's own message so that scripts grepping for it still
// find it.
const OpenKruiseExhausted = "pub unavailable allowed is negative"

// DeniedError is a refusal by the budget; its message names the PUB and
// its numbers.
type DeniedError struct {
	Pub     string
	Op      policyv1alpha1.PubOperation
	Pod     string
	Status  policyv1alpha1.PodUnavailableBudgetStatus
	TooMany bool
}

func (e *DeniedError) Error() string {
	s := e.Status
	if e.TooMany {
		return fmt.Sprintf("PodUnavailableBudget %s refuses %s of pod %s: %d disrupted and unavailable pods are not yet confirmed by the pub controller (at most %d)",
			e.Pub, e.Op, e.Pod, len(s.DisruptedPods)+len(s.UnavailablePods), MaxRecordedPods)
	}
	return fmt.Sprintf("PodUnavailableBudget %s refuses %s of pod %s: unavailableAllowed is %d (currentAvailable %d, desiredAvailable %d, totalReplicas %d); %s",
		e.Pub, e.Op, e.Pod, s.UnavailableAllowed, s.CurrentAvailable, s.DesiredAvailable, s.TotalReplicas, OpenKruiseExhausted)
}

// CheckAndDecrement takes one unavailability from status for op on pod
// at now, recording the pod (unavailablePods for UPDATE, disruptedPods
// otherwise), or returns a *DeniedError. status is modified in place: pass
// a copy.
func CheckAndDecrement(pubName string, status *policyv1alpha1.PodUnavailableBudgetStatus, pod string, op policyv1alpha1.PubOperation, now time.Time) error {
	if status.UnavailableAllowed <= 0 {
		return &DeniedError{Pub: pubName, Op: op, Pod: pod, Status: *status}
	}
	if len(status.DisruptedPods)+len(status.UnavailablePods) > MaxRecordedPods {
		return &DeniedError{Pub: pubName, Op: op, Pod: pod, Status: *status, TooMany: true}
	}
	status.UnavailableAllowed--
	stamp := metav1.NewTime(now).Rfc3339Copy()
	if op == policyv1alpha1.PubUpdateOperation {
		if status.UnavailablePods == nil {
			status.UnavailablePods = map[string]metav1.Time{}
		}
		status.UnavailablePods[pod] = stamp
	} else {
		if status.DisruptedPods == nil {
			status.DisruptedPods = map[string]metav1.Time{}
		}
		status.DisruptedPods[pod] = stamp
	}
	return nil
}

// UpdateOperation classifies a pod UPDATE: ok false when it cannot make
// the pod unavailable (neither the spec changed nor an unavailable-pod
// label appeared); RESIZE when only container resources changed (the
// guard treats it as UPDATE unless InPlacePodVerticalScaling).
func UpdateOperation(oldPod, newPod *corev1.Pod) (policyv1alpha1.PubOperation, bool) {
	labelAdded := !HasUnavailableLabel(oldPod.Labels) && HasUnavailableLabel(newPod.Labels)
	if !labelAdded && reflect.DeepEqual(oldPod.Spec, newPod.Spec) {
		return "", false
	}
	if !labelAdded && onlyResourcesChanged(oldPod, newPod) {
		return policyv1alpha1.PubResizeOperation, true
	}
	return policyv1alpha1.PubUpdateOperation, true
}

// onlyResourcesChanged: the specs differ only in container resources,
// every changed resource is cpu or memory with a restart-free resize
// policy, and the QoS class cannot change (requests == limits stays as
// it was). A simplification of OpenKruise's CanResizeInplace.
func onlyResourcesChanged(oldPod, newPod *corev1.Pod) bool {
	if len(oldPod.Spec.Containers) != len(newPod.Spec.Containers) {
		return false
	}
	a, b := oldPod.Spec.DeepCopy(), newPod.Spec.DeepCopy()
	for i := range a.Containers {
		a.Containers[i].Resources, b.Containers[i].Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		return false
	}
	for i, nc := range newPod.Spec.Containers {
		oc := oldPod.Spec.Containers[i]
		if oc.Name != nc.Name {
			return false
		}
		restart := map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy{}
		for _, p := range nc.ResizePolicy {
			restart[p.ResourceName] = p.RestartPolicy
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if changed(oc.Resources, nc.Resources, name) && restart[name] == corev1.RestartContainer {
				return false
			}
		}
		for name := range union(oc.Resources, nc.Resources) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && changed(oc.Resources, nc.Resources, name) {
				return false
			}
		}
		if guaranteed(oc.Resources) != guaranteed(nc.Resources) {
			return false
		}
	}
	return true
}

func changed(a, b corev1.ResourceRequirements, n corev1.ResourceName) bool {
	eq := func(x, y corev1.ResourceList) bool {
		qx, okx := x[n]
		qy, oky := y[n]
		return okx == oky && (!okx || qx.Equal(qy))
	}
	return !eq(a.Requests, b.Requests) || !eq(a.Limits, b.Limits)
}

func union(a, b corev1.ResourceRequirements) map[corev1.ResourceName]bool {
	out := map[corev1.ResourceName]bool{}
	for _, l := range []corev1.ResourceList{a.Requests, a.Limits, b.Requests, b.Limits} {
		for n := range l {
			out[n] = true
		}
	}
	return out
}

func guaranteed(r corev1.ResourceRequirements) bool {
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		l, ok := r.Limits[n]
		if !ok {
			return false
		}
		if q, ok := r.Requests[n]; ok && !q.Equal(l) {
			return false
		}
	}
	return true
}

// InPlaceUpdateStart reports a pods/status write that turns the pod's
// InPlaceUpdateReady condition False: how Flotilla's workloads (kit/inplace)
// start an in-place update, taking the pod out of endpoints before its spec
// changes. That write, not the spec update after it, is what makes the pod
// unavailable, so the guard takes the budget there (OpenKruise's CloneSet
// asks the budget in-process at the same point).
func InPlaceUpdateStart(oldPod, newPod *corev1.Pod) bool {
	return podutil.IsInPlaceUpdateNotReady(newPod) && !podutil.IsInPlaceUpdateNotReady(oldPod)
}
