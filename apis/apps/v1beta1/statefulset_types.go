package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// NOTE: apps.kruise.io/v1alpha1 StatefulSet (../v1alpha1/same_as_v1beta1.go)
// uses the spec and status types of this file, as v1alpha1 AdvancedCronJob,
// BroadcastJob and ImagePullJob use theirs. Both versions are served with CRD
// conversion strategy None, so their schemas must stay identical; a test in
// this module checks the generated CRD.

// StatefulSetSpec is the desired state of an Advanced StatefulSet.
//
// Defaults that depend on other fields or on feature gates are left to the
// controller: rollingUpdate when the user sets updateStrategy.type
// RollingUpdate without it, volumeClaimUpdateStrategy.type (gate
// StatefulSetAutoResizePVCGate), pod template defaults.
//
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.maxUnavailable) || self.podManagementPolicy == 'Parallel' || (type(self.updateStrategy.rollingUpdate.maxUnavailable) == int && self.updateStrategy.rollingUpdate.maxUnavailable == 1)",message="spec.updateStrategy.rollingUpdate.maxUnavailable may only differ from 1 when spec.podManagementPolicy is Parallel"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.unorderedUpdate) || self.podManagementPolicy == 'Parallel'",message="spec.updateStrategy.rollingUpdate.unorderedUpdate requires spec.podManagementPolicy Parallel"
type StatefulSetSpec struct {
	// Replicas is the desired number of pods, at most 100,000
	// (pub.MaxReplicas).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of this set; it must match the template labels.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods to create.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are PVCs created per ordinal (<vct>-<set>-<ordinal>).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ServiceName is the governing headless service.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// PodManagementPolicy controls ordering of pod creation and deletion.
	// +kubebuilder:default=OrderedReady
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// UpdateStrategy controls rolling updates.
	// +kubebuilder:default={type: RollingUpdate, rollingUpdate: {}}
	// +optional
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// ReserveOrdinals are ordinals (ints, or ranges "a-b") that are skipped,
	// at most 100,000 in all (pub.MaxReservedOrdinals; a reversed range
	// counts 0 here and is reported by the controller).
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:XIntOrString
	// +kubebuilder:validation:items:Pattern=`^[0-9]+-[0-9]+$`
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.all(o, type(o) == string || o >= 0)",message="spec.reserveOrdinals must be non-negative integers or ranges like \"3-5\""
	// +kubebuilder:validation:XValidation:rule="self.map(o, type(o) == string ? (int(o.split('-')[1]) >= int(o.split('-')[0]) ? int(o.split('-')[1]) - int(o.split('-')[0]) + 1 : 0) : 1).sum() <= 100000",message="spec.reserveOrdinals may reserve at most 100000 ordinals in all"
	// +optional
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`

	// Lifecycle hooks (preDelete, inPlaceUpdate, preNormal).
	// +optional
	Lifecycle *appspub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy tunes scaling (Parallel only).
	// +optional
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// PersistentVolumeClaimRetentionPolicy describes the lifecycle of PVCs
	// created from volumeClaimTemplates.
	// +kubebuilder:default={whenDeleted: Retain, whenScaled: Retain}
	// +optional
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// Ordinals configures the first ordinal (gate StatefulSetStartOrdinal).
	// +optional
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`

	// VolumeClaimUpdateStrategy controls PVC updates (gate StatefulSetAutoResizePVCGate).
	// +optional
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty"`
}

// VolumeClaimUpdateStrategyType is how PVCs follow volumeClaimTemplates changes.
// +kubebuilder:validation:Enum=OnPodRollingUpdate;OnDelete
type VolumeClaimUpdateStrategyType string

const (
	// OnPodRollingUpdateVolumeClaimUpdateStrategyType updates PVCs with the pods.
	OnPodRollingUpdateVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnPodRollingUpdate"
	// OnDeleteVolumeClaimUpdateStrategyType updates PVCs only when they are recreated.
	OnDeleteVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnDelete"
)

// VolumeClaimUpdateStrategy controls PVC updates.
type VolumeClaimUpdateStrategy struct {
	// +optional
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

// StatefulSetScaleStrategy tunes scaling.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable limits unavailable pods while scaling (Parallel only).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.scaleStrategy.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetOrdinals configures ordinal numbering.
type StatefulSetOrdinals struct {
	// Start is the first ordinal.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Start int32 `json:"start"`
}

// PersistentVolumeClaimRetentionPolicyType is what happens to PVCs.
// +kubebuilder:validation:Enum=Retain;Delete
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps PVCs.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes PVCs.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// StatefulSetPersistentVolumeClaimRetentionPolicy describes PVC retention.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the StatefulSet is deleted.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled applies when the StatefulSet is scaled down.
	// +kubebuilder:default=Retain
	// +optional
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetUpdateStrategy controls updates.
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || self.type == 'RollingUpdate'",message="spec.updateStrategy.rollingUpdate is only allowed when spec.updateStrategy.type is RollingUpdate"
type StatefulSetUpdateStrategy struct {
	// Type of update.
	// +kubebuilder:default=RollingUpdate
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +optional
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate parameters (type RollingUpdate only).
	// +optional
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// PodUpdateStrategyType is how a single pod is updated.
// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly
type PodUpdateStrategyType string

const (
	// RecreatePodUpdateStrategyType deletes and recreates the pod.
	RecreatePodUpdateStrategyType PodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossiblePodUpdateStrategyType updates in place when possible.
	InPlaceIfPossiblePodUpdateStrategyType PodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdateStrategyType only updates in place.
	InPlaceOnlyPodUpdateStrategyType PodUpdateStrategyType = "InPlaceOnly"
)

// RollingUpdateStatefulSetStrategy tunes rolling updates.
type RollingUpdateStatefulSetStrategy struct {
	// Partition: ordinals below it (counting non-reserved ordinals) stay at
	// the current revision. Absolute number only.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition *int32 `json:"partition,omitempty"`

	// MaxUnavailable during update (round down, at least 1). Values other
	// than 1 need podManagementPolicy Parallel.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9][0-9]?)%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 1",message="spec.updateStrategy.rollingUpdate.maxUnavailable must be >= 1"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PodUpdatePolicy is how each pod is updated.
	// +kubebuilder:default=ReCreate
	// +optional
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`

	// Paused stops the rolling update.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// UnorderedUpdate updates pods in priority order instead of by ordinal
	// (podManagementPolicy Parallel only).
	// +optional
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates.
	// +optional
	InPlaceUpdateStrategy *appspub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`

	// MinReadySeconds a new or updated pod must be ready before the update
	// moves on.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// UnorderedUpdateStrategy updates pods by priority.
type UnorderedUpdateStrategy struct {
	// +optional
	PriorityStrategy *appspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
}

// StatefulSetStatus is the observed state of a StatefulSet.
type StatefulSetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	Replicas           int32 `json:"replicas"`
	ReadyReplicas      int32 `json:"readyReplicas"`
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`
	CurrentReplicas   int32 `json:"currentReplicas"`
	UpdatedReplicas   int32 `json:"updatedReplicas"`
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions (upstream StatefulSet conditions plus FailedCreatePod / FailedUpdatePod).
	// +optional
	Conditions []appsv1.StatefulSetCondition `json:"conditions,omitempty"`
	// LabelSelector is the selector in string form (scale subresource / HPA).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// VolumeClaims reports PVC template compatibility.
	// +optional
	VolumeClaims []VolumeClaimStatus `json:"volumeClaims,omitempty"`
}

// Extra condition types used by the Advanced StatefulSet controller.
const (
	FailedCreatePod appsv1.StatefulSetConditionType = "FailedCreatePod"
	FailedUpdatePod appsv1.StatefulSetConditionType = "FailedUpdatePod"
)

// VolumeClaimStatus reports how many pods use PVCs compatible with a template.
type VolumeClaimStatus struct {
	VolumeClaimName         string `json:"volumeClaimName"`
	CompatibleReplicas      int32  `json:"compatibleReplicas"`
	CompatibleReadyReplicas int32  `json:"compatibleReadyReplicas"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=sts;asts
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: the pods' label controller-revision-hash is <name>-<hash of up to 10 characters> and a label value has at most 63"

// StatefulSet (Advanced StatefulSet) is a StatefulSet with in-place update,
// reserved ordinals, lifecycle hooks and parallel rolling updates. Its name
// has at most 52 characters (pub.MaxWorkloadNameLength).
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// StatefulSetList is a list of StatefulSets.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}
