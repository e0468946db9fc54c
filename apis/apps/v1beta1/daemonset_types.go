package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// DaemonSetUpdateStrategyType is the DaemonSet update type.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateDaemonSetStrategyType replaces pods node by node.
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType replaces pods only when they are deleted.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// RollingUpdateType is the flavour of a DaemonSet rolling update. v1alpha1's
// deprecated Surging does not exist here: converting it gives Standard with
// maxSurge (default 1) and maxUnavailable (default 0) written out
// (apis/apps/conversion).
// +kubebuilder:validation:Enum=Standard;InPlaceIfPossible
type RollingUpdateType string

const (
	// StandardRollingUpdateType deletes old pods and creates new ones (or
	// surges when maxSurge > 0).
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// InplaceRollingUpdateType updates pods in place when possible.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
)

// DaemonSetUpdateStrategy controls DaemonSet updates.
type DaemonSetUpdateStrategy struct {
	// Type of update.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate parameters.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes DaemonSet rolling updates.
//
// maxUnavailable defaults to 1 only when neither maxUnavailable nor maxSurge
// is set (a schema default cannot express that): the CRD defaults it when it
// creates the whole rollingUpdate block, otherwise the controller resolves
// a missing value (1 if maxSurge is also unset, else 0).
//
// The first rule is OpenKruise's "cannot be 0 when maxSurge is 0": once
// either budget is given, the two resolved as above must not both be 0 —
// `maxUnavailable: 0` alone, `maxSurge: 0` alone or both 0 would give the
// update no budget at all (OpenKruise rejects them; only the case where
// neither is given gets the default of 1).
//
// +kubebuilder:validation:XValidation:rule="(!has(self.maxUnavailable) && !has(self.maxSurge)) || !((!has(self.maxUnavailable) || (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%')) && (!has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')))",message="spec.updateStrategy.rollingUpdate.maxUnavailable cannot be 0 when maxSurge is 0",fieldPath=".maxUnavailable"
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || !has(self.maxSurge) || (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%') || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.updateStrategy.rollingUpdate.maxSurge may not be set when maxUnavailable is non-zero",fieldPath=".maxSurge"
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdateType) || self.rollingUpdateType != 'InPlaceIfPossible' || !has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.updateStrategy.rollingUpdate.maxSurge must be 0 when rollingUpdateType is InPlaceIfPossible",fieldPath=".maxSurge"
type RollingUpdateDaemonSet struct {
	// Type is the rolling update flavour.
	// +kubebuilder:default=Standard
	// +optional
	Type RollingUpdateType `json:"rollingUpdateType,omitempty"`

	// MaxUnavailable pods during the update (round up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.rollingUpdate.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is the number of nodes that may run an old and a new pod at
	// the same time (round up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.rollingUpdate.maxSurge must be >= 0"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Selector limits the update to nodes with matching labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number (or percentage of desiredNumberScheduled,
	// rounded down) of pods that stay at the old revision.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.rollingUpdate.partition must be >= 0"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// Paused stops the rolling update.
	// +optional
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetSpec is the desired state of an Advanced DaemonSet.
//
// A RollingUpdate strategy without a rollingUpdate block is valid; the
// controller then uses Standard / maxUnavailable 1 / maxSurge 0 / partition 0.
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycle) || !has(self.lifecycle.inPlaceUpdate)",message="spec.lifecycle.inPlaceUpdate is not supported for DaemonSet",fieldPath=".lifecycle.inPlaceUpdate"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchLabels) || size(self.selector.matchLabels) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && self.template.metadata.labels.filter(k, k in self.selector.matchLabels && self.selector.matchLabels[k] == self.template.metadata.labels[k]).size() == size(self.selector.matchLabels))",message="spec.template.metadata.labels must contain every spec.selector.matchLabels entry",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Always' || self.template.spec.restartPolicy.size() == 0",message="spec.template.spec.restartPolicy must be Always",fieldPath=".template.spec.restartPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.activeDeadlineSeconds)",message="spec.template.spec.activeDeadlineSeconds is not supported by DaemonSet",fieldPath=".template.spec.activeDeadlineSeconds"
type DaemonSetSpec struct {
	// Selector selects the pods of this DaemonSet. It is immutable, as in
	// OpenKruise (and apps/v1): pods the new selector no longer matches
	// would be released and replaced, so every node would run two daemons.
	// Every other spec field may change (OpenKruise's list: template,
	// updateStrategy, lifecycle, burstReplicas, minReadySeconds,
	// revisionHistoryLimit), so the selector is the only field the
	// transition rule needs; a field added to this spec must decide.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable: updates to daemonset spec for fields other than 'burstReplicas', 'template', 'lifecycle', 'updateStrategy', 'minReadySeconds' and 'revisionHistoryLimit' are forbidden"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods to create. The schema is generated
	// schemaless (no pod field is ever pruned); a few fields are declared by
	// apis/crd-patches/daemonsets.apps.kruise.io.yaml for the rules above.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// UpdateStrategy controls updates.
	// +kubebuilder:default={type: RollingUpdate, rollingUpdate: {rollingUpdateType: Standard, maxUnavailable: 1}}
	// +optional
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds a pod must be ready before it counts as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// BurstReplicas caps pod creations/deletions/in-place updates per sync
	// (percentages of desiredNumberScheduled round down).
	// +kubebuilder:default=250
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.burstReplicas must be >= 0"
	// +optional
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Lifecycle hooks; only preDelete is supported.
	// +optional
	Lifecycle *appspub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy controls pod creation on nodes that have none yet
	// (v1alpha1: annotation daemonset.kruise.io/progressive-create-pod).
	// +optional
	ScaleStrategy *DaemonSetScaleStrategy `json:"scaleStrategy,omitempty"`
}

// DaemonSetScaleStrategy controls pod creation on new nodes.
type DaemonSetScaleStrategy struct {
	// PartitionedScaling makes the rolling update's partition also hold
	// back the creation of pods on nodes that have none yet.
	// +optional
	PartitionedScaling bool `json:"partitionedScaling,omitempty"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	NumberMisscheduled     int32 `json:"numberMisscheduled"`
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	NumberReady            int32 `json:"numberReady"`
	// ObservedGeneration and NumberAvailable are optional here, as in
	// OpenKruise's v1beta1 (required in v1alpha1).
	// +optional
	ObservedGeneration     int64 `json:"observedGeneration,omitempty"`
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
	// +optional
	NumberAvailable int32 `json:"numberAvailable,omitempty"`
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// UpdateRevision is the hash of the current (update) revision
	// (v1alpha1: daemonSetHash).
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// +optional
	Conditions []appsv1.DaemonSetCondition `json:"conditions,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=daemon;ads
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desiredNumberScheduled",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.currentNumberScheduled",description="The current number of pods."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.numberReady",description="The ready number of pods."
// +kubebuilder:printcolumn:name="UP-TO-DATE",type="integer",JSONPath=".status.updatedNumberScheduled",description="The updated number of pods."
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.numberAvailable",description="The available number of pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
// +kubebuilder:storageversion

// DaemonSet (Advanced DaemonSet) runs a pod on every eligible node, with
// partitioned, selective, surging and in-place rolling updates. v1alpha1 is
// served too, converted by
// apis/apps/conversion (see the package documentation for the mapping).
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DaemonSetSpec   `json:"spec,omitempty"`
	Status DaemonSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// DaemonSetList is a list of DaemonSets.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DaemonSet `json:"items"`
}
