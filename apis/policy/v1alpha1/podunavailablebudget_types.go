package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodUnavailableBudgetSpec is the desired state of a PodUnavailableBudget.
//
// v1alpha1 carries protectOperations / protectTotalReplicas as the
// annotations kruise.io/pub-protect-operations and
// pub.kruise.io/protect-total-replicas (see apps/pub well-known keys).
//
// +kubebuilder:validation:XValidation:rule="has(self.selector) != has(self.targetRef)",message="spec: exactly one of spec.selector and spec.targetRef must be set"
// +kubebuilder:validation:XValidation:rule="has(self.maxUnavailable) != has(self.minAvailable)",message="spec: exactly one of spec.maxUnavailable and spec.minAvailable must be set"
// +kubebuilder:validation:XValidation:rule="has(self.selector) == has(oldSelf.selector) && has(self.targetRef) == has(oldSelf.targetRef)",message="spec.selector and spec.targetRef are immutable"
type PodUnavailableBudgetSpec struct {
	// Selector selects the protected pods (exclusive with targetRef). Immutable.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable"
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// TargetReference names the workload whose pods are protected
	// (exclusive with selector). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.targetRef is immutable"
	// +optional
	TargetReference *TargetReference `json:"targetRef,omitempty"`

	// MaxUnavailable pods (percentages round up); exclusive with minAvailable.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable pods (percentages round up); exclusive with maxUnavailable.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.minAvailable must be >= 0"
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
}

// TargetReference names a workload.
type TargetReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$')",message="spec.targetRef.apiVersion must be group/version or version, e.g. apps/v1"
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PodUnavailableBudgetStatus is the observed state of a PodUnavailableBudget.
type PodUnavailableBudgetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DisruptedPods were deleted/evicted but are not yet observed gone.
	// +optional
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`
	// UnavailablePods were updated and are not yet observed available.
	// +optional
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty"`
	// UnavailableAllowed is the number of further disruptions allowed.
	UnavailableAllowed int32 `json:"unavailableAllowed"`
	// CurrentAvailable is the number of available protected pods.
	CurrentAvailable int32 `json:"currentAvailable"`
	// DesiredAvailable is the minimum number of available pods.
	DesiredAvailable int32 `json:"desiredAvailable"`
	// TotalReplicas is the expected number of pods.
	TotalReplicas int32 `json:"totalReplicas"`
	// Conditions are Flotilla's own (OpenKruise's status has none; its
	// clients ignore the field): WebhookInScope, True once the admission
	// webhook's match conditions cover this object (kit/webhook).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodUnavailableBudget operation values (annotation kruise.io/pub-protect-operations).
type PubOperation string

const (
	PubDeleteOperation PubOperation = "DELETE"
	PubUpdateOperation PubOperation = "UPDATE"
	PubEvictOperation  PubOperation = "EVICT"
	PubResizeOperation PubOperation = "RESIZE"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pub
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="UnavailableAllowed is the number of pod unavailable that are currently allowed"
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="CurrentAvailable is the current number of available pods"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="DesiredAvailable is the minimum desired number of available pods"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="TotalReplicas is the total number of pods counted by this budget"

// PodUnavailableBudget limits voluntary disruptions (delete, evict,
// in-place update) of a set of pods.
type PodUnavailableBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodUnavailableBudgetSpec   `json:"spec,omitempty"`
	Status PodUnavailableBudgetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodUnavailableBudgetList is a list of PodUnavailableBudgets.
type PodUnavailableBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodUnavailableBudget `json:"items"`
}
