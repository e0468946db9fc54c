// Package pubcontrol is the PodUnavailableBudget logic shared by the
// controller (status) and the pod webhook (the guard): what a budget
// protects, how many pods it wants available, which pods count as
// available, and the check-and-decrement taken under the PUB's
// resourceVersion. Everything here is pure: no client, no cache.
package pubcontrol

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// Windows after which a recorded pod is dropped from the status maps
// (OpenKruise's DeletionTimeout and UpdatedDelayCheckTime): a deletion not
// observed within 20s did not happen (event NotDeleted); an in-place
// update is trusted to the informer after 10s.
const (
	DeletionTimeout       = 20 * time.Second
	UpdatedDelayCheckTime = 10 * time.Second
	// MaxRecordedPods bounds disruptedPods + unavailablePods: beyond it the
	// guard refuses, as the controller is not keeping up.
	MaxRecordedPods = 2000
)

// RelatedPub is the PUB a pod was marked with (either key), or "".
func RelatedPub(pod metav1.Object) string {
	a := pod.GetAnnotations()
	if v := a[pub.PodRelatedPubAnnotationNew]; v != "" {
		return v
	}
	return a[pub.PodRelatedPubAnnotation]
}

// NoProtect reports the pod annotation pub.kruise.io/no-protect set to a
// true boolean.
func NoProtect(pod metav1.Object) bool {
	v, err := strconv.ParseBool(pod.GetAnnotations()[pub.PodPubNoProtectionAnnotation])
	return err == nil && v
}

// HasUnavailableLabel reports a label with the unavailable-pod.kruise.io/
// prefix: the pod is unavailable on purpose.
func HasUnavailableLabel(l map[string]string) bool {
	for k := range l {
		if strings.HasPrefix(k, pub.PubUnavailablePodLabelPrefix) {
			return true
		}
	}
	return false
}

// Available is what the budget counts: Running, Ready, not terminating, not
// marked unavailable, and no in-place update in flight (its spec and its
// containers agree). SidecarSet in-place upgrades are not checked (see the
// README).
func Available(pod *corev1.Pod) bool {
	return podutil.IsActiveAndReady(pod) && !HasUnavailableLabel(pod.Labels) && podutil.IsInPlaceUpdateCompleted(pod)
}

// ProtectOperations are the operations a PUB protects: the annotation
// kruise.io/pub-protect-operations (comma list), default DELETE, UPDATE,
// EVICT. Without InPlacePodVerticalScaling a resize is an update.
func ProtectOperations(p *policyv1alpha1.PodUnavailableBudget, verticalScaling bool) sets.Set[policyv1alpha1.PubOperation] {
	ops := sets.New[policyv1alpha1.PubOperation]()
	for _, o := range strings.Split(p.Annotations[pub.PubProtectOperationAnnotation], ",") {
		if o = strings.TrimSpace(o); o != "" {
			ops.Insert(policyv1alpha1.PubOperation(o))
		}
	}
	if ops.Len() == 0 {
		ops.Insert(policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubUpdateOperation, policyv1alpha1.PubEvictOperation)
	}
	if !verticalScaling && ops.Has(policyv1alpha1.PubUpdateOperation) {
		ops.Insert(policyv1alpha1.PubResizeOperation)
	}
	return ops
}

// ProtectTotalReplicas is the annotation pub.kruise.io/protect-total-replicas
// when it holds a positive integer: it replaces the workloads' replicas.
func ProtectTotalReplicas(p *policyv1alpha1.PodUnavailableBudget) (int32, bool) {
	v, ok := p.Annotations[pub.PubProtectTotalReplicasAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// DesiredAvailable is expected − maxUnavailable (never below 0) or
// minAvailable; percentages of expected round up, as OpenKruise does.
func DesiredAvailable(spec policyv1alpha1.PodUnavailableBudgetSpec, expected int32) (int32, error) {
	switch {
	case spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("spec.maxUnavailable: %w", err)
		}
		return max(expected-int32(n), 0), nil
	case spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, fmt.Errorf("spec.minAvailable: %w", err)
		}
		return int32(n), nil
	}
	return 0, nil
}

// Observed is what the controller saw for one PUB.
type Observed struct {
	Pods     []*corev1.Pod
	Expected int32
	Now      time.Time
}

// Result is the status the controller writes, the pods whose deletion
// timed out (for NotDeleted events) and when to look again.
type Result struct {
	Status     policyv1alpha1.PodUnavailableBudgetStatus
	NotDeleted []*corev1.Pod
	Recheck    time.Duration // 0: no expiry pending
}

// CalculateStatus computes the status from the observed pods and the
// status currently stored (its maps carry the guard's records): records
// of pods gone or inactive are dropped, disruptions after 20s and updates
// after 10s; recorded pods never count as available.
func CalculateStatus(p *policyv1alpha1.PodUnavailableBudget, o Observed) (Result, error) {
	desired, err := DesiredAvailable(p.Spec, o.Expected)
	if err != nil {
		return Result{}, err
	}
	var r Result
	disrupted := map[string]metav1.Time{}
	unavailable := map[string]metav1.Time{}
	recheck := func(at time.Time) {
		if d := at.Sub(o.Now); d > 0 && (r.Recheck == 0 || d < r.Recheck) {
			r.Recheck = d
		}
	}
	var current int32
	for _, pod := range o.Pods {
		if !podutil.IsActive(pod) {
			continue
		}
		recorded := false
		if t, ok := p.Status.DisruptedPods[pod.Name]; ok {
			if at := t.Add(DeletionTimeout); at.Before(o.Now) {
				r.NotDeleted = append(r.NotDeleted, pod)
			} else {
				disrupted[pod.Name], recorded = t, true
				recheck(at)
			}
		}
		if t, ok := p.Status.UnavailablePods[pod.Name]; ok {
			if at := t.Add(UpdatedDelayCheckTime); !at.Before(o.Now) {
				unavailable[pod.Name], recorded = t, true
				recheck(at)
			}
		}
		if !recorded && Available(pod) {
			current++
		}
	}
	r.Status = policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: p.Generation,
		DisruptedPods:      disrupted,
		UnavailablePods:    unavailable,
		UnavailableAllowed: max(current-desired, 0),
		CurrentAvailable:   current,
		DesiredAvailable:   desired,
		TotalReplicas:      o.Expected,
		Conditions:         p.Status.Conditions, // the webhook's (WebhookInScope), not computed here
	}
	return r, nil
}

// StatusEqual compares two statuses as the API server would store them
// (empty and nil maps are the same).
func StatusEqual(a, b policyv1alpha1.PodUnavailableBudgetStatus) bool {
	norm := func(m map[string]metav1.Time) map[string]metav1.Time {
		if len(m) == 0 {
			return nil
		}
		return m
	}
	a.DisruptedPods, a.UnavailablePods = norm(a.DisruptedPods), norm(a.UnavailablePods)
	b.DisruptedPods, b.UnavailablePods = norm(b.DisruptedPods), norm(b.UnavailablePods)
	return apiequality.Semantic.DeepEqual(a, b)
}
