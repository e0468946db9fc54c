// Package spread holds WorkloadSpread's pure decisions, shared by the pod
// webhook (which subset a new pod takes, how the pod is changed, what the
// admission records in the status) and the reconciler (status counts,
// deletion costs, rescheduling). Nothing here reads or writes the API.
package spread

import (
	"encoding/json"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// OpenKruise's keys and values (pkg/util/workloadspread).
const (
	// AnnotationKey is the pod annotation naming its WorkloadSpread and
	// subset (JSON of Injected).
	AnnotationKey = "apps.kruise.io/matched-workloadspread"
	// DeletionCostKey is the pod annotation ReplicaSets and CloneSets
	// delete by (lowest first).
	DeletionCostKey = "controller.kubernetes.io/pod-deletion-cost"
	// CostPositive and CostNegative scale the deletion cost of a subset's
	// pods within and beyond its maxReplicas.
	CostPositive = 100
	CostNegative = -100
	// CreatePodTimeout: a pod admitted to a subset and never seen stops
	// holding its place after this.
	CreatePodTimeout = 30 * time.Second
	// DeletePodTimeout: a pod whose deletion was admitted and that still
	// exists counts again after this.
	DeletePodTimeout = 15 * time.Second
	// MaxScheduledFailedDuration: an unschedulable subset is tried again
	// after this.
	MaxScheduledFailedDuration = 300 * time.Second
	// FakeSubsetName groups the pods of the workload in no subset.
	FakeSubsetName = "kruise.io/workloadspread-fake-subset-name"
)

// Injected is the value of AnnotationKey: {"name":..,"subset":..,"uid":..}.
type Injected struct {
	Name   string `json:"name"`
	Subset string `json:"subset"`
	// UID is the key of the pod in creatingPods when it had no name at
	// admission (generateName).
	UID string `json:"uid,omitempty"`
}

// InjectedOf parses a pod's annotation (nil when absent or not JSON).
func InjectedOf(pod *corev1.Pod) *Injected {
	s := pod.Annotations[AnnotationKey]
	if s == "" {
		return nil
	}
	var in Injected
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil
	}
	return &in
}

// Encode returns the annotation value.
func (in Injected) Encode() string {
	b, _ := json.Marshal(in) // a struct of strings always marshals
	return string(b)
}

// MaxReplicas is a subset's limit for a workload of replicas pods: -1 when
// unlimited, percents rounded up (as OpenKruise).
func MaxReplicas(s *appsv1alpha1.WorkloadSpreadSubset, replicas int32) (int32, error) {
	if s.MaxReplicas == nil {
		return -1, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(s.MaxReplicas, int(replicas), true)
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt32 {
		v = math.MaxInt32
	}
	return int32(v), nil
}

// HasPercent reports whether some subset's maxReplicas is a percent (the
// workload's replicas matter).
func HasPercent(ws *appsv1alpha1.WorkloadSpread) bool {
	for _, s := range ws.Spec.Subsets {
		if s.MaxReplicas != nil && s.MaxReplicas.Type == intstr.String {
			return true
		}
	}
	return false
}

// Schedulable reports whether a subset's Schedulable condition is not
// False.
func Schedulable(st *appsv1alpha1.WorkloadSpreadSubsetStatus) bool {
	c := SubsetCondition(st, appsv1alpha1.SubsetSchedulable)
	return c == nil || c.Status != corev1.ConditionFalse
}

// SubsetCondition returns st's condition of type t, or nil.
func SubsetCondition(st *appsv1alpha1.WorkloadSpreadSubsetStatus, t appsv1alpha1.WorkloadSpreadSubsetConditionType) *appsv1alpha1.WorkloadSpreadSubsetCondition {
	if st == nil {
		return nil
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}
