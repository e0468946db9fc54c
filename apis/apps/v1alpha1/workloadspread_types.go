package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WorkloadSpreadSpec defines how one workload's pods are spread over
// subsets of nodes (OpenKruise v1alpha1 field names). The sum of percent
// maxReplicas over 100% and a second WorkloadSpread on the same workload are
// refused by the validating webhook (CEL cannot cost the percent sum).
// +kubebuilder:validation:XValidation:rule="!has(self.subsets) || self.subsets.all(s, !has(s.maxReplicas) || type(s.maxReplicas) == int) || self.subsets.all(s, !has(s.maxReplicas) || type(s.maxReplicas) == string)",message="spec.subsets: the maxReplicas type of all subsets must be the same",fieldPath=".subsets"
// +kubebuilder:validation:XValidation:rule="!has(self.targetRef) || self.targetRef.kind != 'StatefulSet' || !has(self.subsets) || self.subsets.all(s, !has(s.maxReplicas) || type(s.maxReplicas) == int)",message="spec.subsets: the maxReplicas type must be Int for StatefulSet",fieldPath=".subsets"
type WorkloadSpreadSpec struct {
	// TargetReference is the workload whose pods are spread; it cannot
	// change once set.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="change TargetReference is not permitted for WorkloadSpread"
	// +kubebuilder:validation:XValidation:rule="(self.apiVersion.startsWith('apps.kruise.io/') && (self.kind == 'CloneSet' || self.kind == 'StatefulSet')) || (self.apiVersion == 'apps/v1' && (self.kind == 'Deployment' || self.kind == 'ReplicaSet' || self.kind == 'StatefulSet')) || (self.apiVersion == 'batch/v1' && self.kind == 'Job')",message="TargetReference's GroupKind is not permitted: CloneSet, StatefulSet (apps.kruise.io), Deployment, ReplicaSet, StatefulSet (apps/v1) or Job (batch/v1)"
	TargetReference *TargetReference `json:"targetRef"`

	// Subsets, in order of preference: a new pod goes to the first subset
	// with room (maxReplicas) that is schedulable.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// Duplicate subset names are refused by the API server (a list map
	// keyed by name: "spec.subsets[i]: Duplicate value").
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	Subsets []WorkloadSpreadSubset `json:"subsets" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy: Fixed (default) or Adaptive (a pod that cannot be
	// scheduled in its subset within rescheduleCriticalSeconds is deleted
	// and its subset marked unschedulable, so its replacement goes to the
	// next subset).
	// +optional
	ScheduleStrategy WorkloadSpreadScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// TargetReference names a workload (WorkloadSpread: a CloneSet, an Advanced
// or apps/v1 StatefulSet, a Deployment, a ReplicaSet or a Job; each kind
// using it says which kinds it accepts).
type TargetReference struct {
	// API version of the referent.
	APIVersion string `json:"apiVersion"`
	// Kind of the referent.
	Kind string `json:"kind"`
	// Name of the referent.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// WorkloadSpreadScheduleStrategyType is Adaptive or Fixed.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type WorkloadSpreadScheduleStrategyType string

const (
	// AdaptiveWorkloadSpreadScheduleStrategyType reschedules pods a subset
	// cannot place.
	AdaptiveWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Adaptive"
	// FixedWorkloadSpreadScheduleStrategyType keeps a pod in its subset.
	FixedWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Fixed"
)

// WorkloadSpreadScheduleStrategy is the strategy of a WorkloadSpread.
// +kubebuilder:validation:XValidation:rule="!has(self.adaptive) || self.type == 'Adaptive'",message="the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",fieldPath=".adaptive"
type WorkloadSpreadScheduleStrategy struct {
	// Type is Fixed (default) or Adaptive.
	// +optional
	Type WorkloadSpreadScheduleStrategyType `json:"type,omitempty"`
	// Adaptive is the Adaptive strategy's settings.
	// +optional
	Adaptive *AdaptiveWorkloadSpreadStrategy `json:"adaptive,omitempty"`
}

// AdaptiveWorkloadSpreadStrategy configures rescheduling.
type AdaptiveWorkloadSpreadStrategy struct {
	// DisableSimulationSchedule: accepted for compatibility; Flotilla never
	// simulates scheduling.
	// +optional
	DisableSimulationSchedule bool `json:"disableSimulationSchedule,omitempty"`
	// RescheduleCriticalSeconds: how long a pod may stay unschedulable in
	// its subset before it is deleted and the subset marked unschedulable.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`
}

// WorkloadSpreadSubset is one domain of nodes with its limit and its
// changes to the pods it takes.
type WorkloadSpreadSubset struct {
	// Name of the subset, unique in the WorkloadSpread.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// RequiredNodeSelectorTerm is ANDed into each of the pod's required
	// node selector terms (or becomes its only term).
	// +optional
	RequiredNodeSelectorTerm *corev1.NodeSelectorTerm `json:"requiredNodeSelectorTerm,omitempty"`
	// PreferredNodeSelectorTerms are appended to the pod's preferred node
	// affinity.
	// +optional
	PreferredNodeSelectorTerms []corev1.PreferredSchedulingTerm `json:"preferredNodeSelectorTerms,omitempty"`
	// Tolerations are appended to the pod's.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// MaxReplicas: how many pods the subset takes, an integer or a percent
	// of the workload's replicas (rounded up); nil means no limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="maxReplicas is not valid for subset: an integer >= 0 or a percent in 0%..100%"
	// +optional
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`
	// Patch is a strategic merge patch applied to the pods of the subset
	// (labels, annotations, container resources, ...).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// WorkloadSpreadStatus is the observed state of a WorkloadSpread.
type WorkloadSpreadStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SubsetStatuses, in the order of spec.subsets.
	// +optional
	SubsetStatuses []WorkloadSpreadSubsetStatus `json:"subsetStatuses,omitempty"`
	// VersionedSubsetStatuses: kept for OpenKruise compatibility; Flotilla
	// counts every version in subsetStatuses and never writes it.
	// +optional
	VersionedSubsetStatuses map[string][]WorkloadSpreadSubsetStatus `json:"versionedSubsetStatuses,omitempty"`
	// Conditions of the WorkloadSpread as a whole (Flotilla):
	// WebhookInScope, and PodsMissed when pods of its workload were created
	// without the webhook.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkloadSpreadSubsetConditionType names a subset condition.
type WorkloadSpreadSubsetConditionType string

const (
	// SubsetSchedulable is False while the subset cannot place pods
	// (Adaptive strategy).
	SubsetSchedulable WorkloadSpreadSubsetConditionType = "Schedulable"
)

// WorkloadSpreadSubsetCondition is a condition of one subset.
type WorkloadSpreadSubsetCondition struct {
	// Type of the condition.
	Type WorkloadSpreadSubsetConditionType `json:"type"`
	// Status: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason in one word.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message for humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkloadSpreadSubsetStatus is the state of one subset.
type WorkloadSpreadSubsetStatus struct {
	// Name of the subset.
	Name string `json:"name"`
	// Replicas is the number of active pods in the subset.
	Replicas int32 `json:"replicas"`
	// Conditions of the subset.
	// +optional
	Conditions []WorkloadSpreadSubsetCondition `json:"conditions,omitempty"`
	// MissingReplicas is how many more pods the subset takes; -1 means no
	// limit.
	MissingReplicas int32 `json:"missingReplicas"`
	// CreatingPods: pods admitted to the subset and not yet seen (pod
	// name, or a generated UID for a pod created by generateName), with
	// the admission time.
	// +optional
	CreatingPods map[string]metav1.Time `json:"creatingPods,omitempty"`
	// DeletingPods: pods whose deletion was admitted and that are not gone
	// yet, with the admission time.
	// +optional
	DeletingPods map[string]metav1.Time `json:"deletingPods,omitempty"`
}

// WorkloadSpread spreads a workload's pods over subsets of nodes.
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ws
// +kubebuilder:printcolumn:name=WorkloadName,type=string,JSONPath=".spec.targetRef.name"
// +kubebuilder:printcolumn:name=WorkloadKind,type=string,JSONPath=".spec.targetRef.kind"
// +kubebuilder:printcolumn:name=Adaptive,type=boolean,JSONPath=`.spec.scheduleStrategy.type[?(@ == "Adaptive")]`,description="Whether use the adaptive reschedule strategy"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type WorkloadSpread struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpreadSpec   `json:"spec,omitempty"`
	Status WorkloadSpreadStatus `json:"status,omitempty"`
}

// WorkloadSpreadList is a list of WorkloadSpreads.
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type WorkloadSpreadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadSpread `json:"items"`
}
