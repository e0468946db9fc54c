package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations of a StatefulSet (apps/v1 or Advanced) asking for a generated
// PersistentPodState, with OpenKruise's keys and meaning.
const (
	// AnnotationAutoGeneratePersistentPodState: "true" makes the controller
	// create (and keep) a PersistentPodState named after the StatefulSet,
	// from the two topology annotations below (at least one must be set).
	AnnotationAutoGeneratePersistentPodState = "kruise.io/auto-generate-persistent-pod-state"
	// AnnotationRequiredPersistentTopology lists node label keys (comma
	// separated) a recreated pod is required to keep.
	AnnotationRequiredPersistentTopology = "kruise.io/required-persistent-topology"
	// AnnotationPreferredPersistentTopology lists node label keys (comma
	// separated) a recreated pod prefers to keep, with weight 100.
	AnnotationPreferredPersistentTopology = "kruise.io/preferred-persistent-topology"
	// AnnotationPersistentPodAnnotations lists pod annotation keys (comma
	// separated) to record.
	AnnotationPersistentPodAnnotations = "kruise.io/persistent-pod-annotations"
	// AnnotationInjectedPersistentPodState is written on a pod by the pod
	// webhook: the name of the PersistentPodState whose topology it injected.
	AnnotationInjectedPersistentPodState = "kruise.io/injected-persistent-pod-state"
)

// PersistentPodStateRetentionPolicyType says when records are dropped.
type PersistentPodStateRetentionPolicyType string

const (
	// PersistentPodStateRetentionPolicyWhenScaled (the default) drops the
	// record of a pod whose ordinal the StatefulSet scaled in.
	PersistentPodStateRetentionPolicyWhenScaled PersistentPodStateRetentionPolicyType = "WhenScaled"
	// PersistentPodStateRetentionPolicyWhenDeleted keeps records until the
	// StatefulSet is deleted.
	PersistentPodStateRetentionPolicyWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
)

// PersistentPodStateSpec is the desired state of a PersistentPodState.
// +kubebuilder:validation:XValidation:rule="has(self.requiredPersistentTopology) || (has(self.preferredPersistentTopology) && size(self.preferredPersistentTopology) > 0)",message="spec: requiredPersistentTopology and preferredPersistentTopology cannot both be empty"
type PersistentPodStateSpec struct {
	// TargetReference is the StatefulSet (apps/v1, or Advanced StatefulSet
	// apps.kruise.io/v1beta1 or v1alpha1) whose pods keep their state.
	// Immutable.
	// +kubebuilder:validation:XValidation:rule="self.kind == 'StatefulSet' && self.apiVersion in ['apps/v1', 'apps.kruise.io/v1beta1', 'apps.kruise.io/v1alpha1']",message="spec.targetRef: only StatefulSet (apps/v1, apps.kruise.io/v1beta1 or apps.kruise.io/v1alpha1) is supported"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.targetRef is immutable"
	TargetReference PersistentPodStateTargetReference `json:"targetRef"`

	// PersistentPodAnnotations are pod annotations recorded with the pod's
	// state.
	// +optional
	PersistentPodAnnotations []PersistentPodAnnotation `json:"persistentPodAnnotations,omitempty"`

	// RequiredPersistentTopology: node label keys whose values a recreated
	// pod must keep (injected as its nodeSelector).
	// +optional
	RequiredPersistentTopology *NodeTopologyTerm `json:"requiredPersistentTopology,omitempty"`

	// PreferredPersistentTopology: node label keys whose values a recreated
	// pod prefers to keep, each term with its weight (injected as preferred
	// node affinity).
	// +optional
	PreferredPersistentTopology []PreferredTopologyTerm `json:"preferredPersistentTopology,omitempty"`

	// PersistentPodStateRetentionPolicy: WhenScaled (default) drops a record
	// when the StatefulSet scales its pod in; WhenDeleted keeps it.
	// +kubebuilder:validation:Enum=WhenScaled;WhenDeleted
	// +optional
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`
}

// PersistentPodStateTargetReference names the StatefulSet of a
// PersistentPodState in its namespace (OpenKruise's TargetReference fields;
// a type of its own so that WorkloadSpread's rules on TargetReference do not
// apply here).
type PersistentPodStateTargetReference struct {
	// API version of the referent.
	APIVersion string `json:"apiVersion"`
	// Kind of the referent.
	Kind string `json:"kind"`
	// Name of the referent.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PreferredTopologyTerm is a weighted NodeTopologyTerm.
type PreferredTopologyTerm struct {
	// Weight of the preference, 1 to 100 (as a preferred scheduling term's).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight     int32            `json:"weight"`
	Preference NodeTopologyTerm `json:"preference"`
}

// NodeTopologyTerm lists node label keys.
type NodeTopologyTerm struct {
	// NodeTopologyKeys are node label keys, e.g. topology.kubernetes.io/zone.
	// +kubebuilder:validation:MinItems=1
	NodeTopologyKeys []string `json:"nodeTopologyKeys"`
}

// PersistentPodAnnotation names one pod annotation to record.
type PersistentPodAnnotation struct {
	Key string `json:"key"`
}

// PersistentPodStateStatus is what the controller recorded.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the generation the status was computed from.
	ObservedGeneration int64 `json:"observedGeneration"`
	// PodStates maps a pod name to its state, recorded once the pod was
	// ready on a node.
	// +optional
	PodStates map[string]PodState `json:"podStates,omitempty"`
	// Conditions (Flotilla): WebhookInScope (the pod webhook is called for
	// the target's pods) and PersistentTopologyInjected (False when a pod was
	// recreated without the recorded topology, e.g. the webhook was down).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodState is one pod's recorded state.
type PodState struct {
	// NodeName is the pod's spec.nodeName.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NodeTopologyLabels are the node's values of the spec's topology keys.
	// +optional
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	// Annotations are the pod's values of persistentPodAnnotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// PersistentPodState keeps the node topology (and annotations) of a
// StatefulSet's pods, so that a pod recreated under the same name is
// scheduled back to it.
type PersistentPodState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentPodStateSpec   `json:"spec,omitempty"`
	Status PersistentPodStateStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PersistentPodStateList is a list of PersistentPodStates.
type PersistentPodStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PersistentPodState `json:"items"`
}
