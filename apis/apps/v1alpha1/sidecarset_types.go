package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// SidecarSetSpec is the desired state of a SidecarSet. It is the only SidecarSet type that differs from v1beta1's
// (spec.namespace here, spec.customVersion there: apis/apps/conversion maps them); the types below it and the
// status are v1beta1's.
//
// podInjectPolicy defaults differ between containers (BeforeAppContainer)
// and initContainers (AfterAppContainer), so they are applied by the
// SidecarSet webhook/controller, not by the schema.
//
// +kubebuilder:validation:XValidation:rule="(has(self.containers) && size(self.containers) > 0) || (has(self.initContainers) && size(self.initContainers) > 0)",message="spec.containers: at least one sidecar container must be defined"
// +kubebuilder:validation:XValidation:rule="!has(self.namespace) || size(self.namespace) == 0 || !has(self.namespaceSelector)",message="spec.namespace and spec.namespaceSelector are mutually exclusive"
type SidecarSetSpec struct {
	// Selector selects the pods to inject into and update.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Namespace restricts the SidecarSet to one namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// NamespaceSelector restricts the SidecarSet to matching namespaces.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected at pod creation only.
	// +optional
	InitContainers []appsv1beta1.SidecarContainer `json:"initContainers,omitempty"`

	// Containers are the sidecar containers.
	// +optional
	Containers []appsv1beta1.SidecarContainer `json:"containers,omitempty"`

	// Volumes are merged into the pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// UpdateStrategy controls in-place sidecar updates.
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy appsv1beta1.SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy controls injection at pod creation.
	// +optional
	InjectionStrategy appsv1beta1.SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// ImagePullSecrets are merged into the pod at creation.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PatchPodMetadata patches pod annotations at injection (and in-place update).
	// +optional
	PatchPodMetadata []appsv1beta1.SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods matched."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods matched and updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of pods matched and ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// SidecarSet injects sidecar containers into matching pods and updates
// them in place.
//
// v1beta1 is served too and is the storage version (as OpenKruise v1.9
// stores it); the CRD converts with strategy Webhook (apis/apps/conversion,
// served by the controller; issue 23).
type SidecarSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SidecarSetSpec               `json:"spec,omitempty"`
	Status appsv1beta1.SidecarSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
