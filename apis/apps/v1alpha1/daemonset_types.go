package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// RollingUpdateType is the flavour of a DaemonSet rolling update.
// +kubebuilder:validation:Enum=Standard;Surging;InPlaceIfPossible
type RollingUpdateType string

const (
	// StandardRollingUpdateType deletes old pods and creates new ones (or
	// surges when maxSurge > 0).
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// SurgingRollingUpdateType is deprecated and treated as Standard (with
	// maxSurge 1 / maxUnavailable 0 when neither is set).
	SurgingRollingUpdateType RollingUpdateType = "Surging"
	// InplaceRollingUpdateType updates pods in place when possible.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
)

// DaemonSetUpdateStrategy controls DaemonSet updates.
type DaemonSetUpdateStrategy struct {
	// Type of update.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type appsv1beta1.DaemonSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate parameters.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes DaemonSet rolling updates.
//
// maxUnavailable defaults to 1 only when neither maxUnavailable nor maxSurge
// is set (a schema default cannot express that): the CRD defaults it when it
// creates the whole rollingUpdate block, otherwise the controller resolves
// a missing value (1 if maxSurge is also unset, else 0; for Surging a
// missing maxSurge is 1, as OpenKruise's defaulting makes it).
//
// The first rule is OpenKruise's "cannot be 0 when maxSurge is 0": once
// either budget is given, the two resolved as above must not both be 0 —
// `maxUnavailable: 0` alone, `maxSurge: 0` alone or both 0 would give the
// update no budget at all (OpenKruise rejects them; only the case where
// neither is given gets the default of 1).
//
// +kubebuilder:validation:XValidation:rule="(!has(self.maxUnavailable) && !has(self.maxSurge)) || !((!has(self.maxUnavailable) || (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%')) && (has(self.maxSurge) ? (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%') : (!has(self.rollingUpdateType) || self.rollingUpdateType != 'Surging')))",message="spec.updateStrategy.rollingUpdate.maxUnavailable cannot be 0 when maxSurge is 0",fieldPath=".maxUnavailable"
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || !has(self.maxSurge) || (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%') || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.updateStrategy.rollingUpdate.maxSurge may not be set when maxUnavailable is non-zero",fieldPath=".maxSurge"
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdateType) || self.rollingUpdateType != 'InPlaceIfPossible' || !has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.updateStrategy.rollingUpdate.maxSurge must be 0 when rollingUpdateType is InPlaceIfPossible",fieldPath=".maxSurge"
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdateType) || self.rollingUpdateType != 'Surging' || !has(self.maxUnavailable) || (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%')",message="spec.updateStrategy.rollingUpdate.maxUnavailable must be 0 when rollingUpdateType is Surging",fieldPath=".maxUnavailable"
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
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	NumberMisscheduled     int32 `json:"numberMisscheduled"`
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	NumberReady            int32 `json:"numberReady"`
	ObservedGeneration     int64 `json:"observedGeneration"`
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
	NumberAvailable        int32 `json:"numberAvailable"`
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// DaemonSetHash is the hash of the current (update) revision.
	DaemonSetHash string `json:"daemonSetHash"`
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

// DaemonSet (Advanced DaemonSet) runs a pod on every eligible node, with
// partitioned, selective, surging and in-place rolling updates.
//
// v1beta1 is served too and is the storage version (as OpenKruise v1.9
// stores it); the CRD converts with strategy Webhook (apis/apps/conversion,
// served by the controller; issue 23).
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
