package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// CloneSetSpec is the desired state of a CloneSet.
//
// Rules that need more than one field live here; single-field rules sit on
// the field. Defaults that depend on other fields (inPlaceUpdateStrategy {}
// for in-place types, pod template defaults) are applied by the controller.
//
// The rules reading spec.template rely on the template fields declared in
// apis/crd-patches/clonesets.apps.kruise.io.yaml (the template itself is
// schemaless, and CEL only sees declared fields). They are the checks of
// OpenKruise's CloneSet webhook that need no other object; the one that does
// (podsToDelete names must be pods of this CloneSet) is the controller's: it
// trims unknown names and reports them (controllers/cloneset/README.md).
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas == 0 || !has(self.updateStrategy.maxUnavailable) || !has(self.updateStrategy.maxSurge) || !((type(self.updateStrategy.maxUnavailable) == int ? self.updateStrategy.maxUnavailable == 0 : self.updateStrategy.maxUnavailable == '0%') && (type(self.updateStrategy.maxSurge) == int ? self.updateStrategy.maxSurge == 0 : self.updateStrategy.maxSurge == '0%'))",message="spec.updateStrategy.maxUnavailable and spec.updateStrategy.maxSurge must not both be 0"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchLabels) || size(self.selector.matchLabels) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && self.template.metadata.labels.filter(k, k in self.selector.matchLabels && self.selector.matchLabels[k] == self.template.metadata.labels[k]).size() == size(self.selector.matchLabels))",message="spec.template.metadata.labels must contain every spec.selector.matchLabels entry",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.restartPolicy) || self.template.spec.restartPolicy == 'Always' || self.template.spec.restartPolicy.size() == 0",message="spec.template.spec.restartPolicy must be Always",fieldPath=".template.spec.restartPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.template.spec) || !has(self.template.spec.activeDeadlineSeconds)",message="spec.template.spec.activeDeadlineSeconds is not supported by CloneSet",fieldPath=".template.spec.activeDeadlineSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || self.progressDeadlineSeconds > (has(self.minReadySeconds) ? self.minReadySeconds : 0)",message="spec.progressDeadlineSeconds must be greater than spec.minReadySeconds",fieldPath=".progressDeadlineSeconds"
type CloneSetSpec struct {
	// Replicas is the desired number of pods, at most 100,000
	// (pub.MaxReplicas).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods owned by this CloneSet. It may not be empty,
	// its matchLabels must be template labels (matchExpressions are not
	// checked at admission), and it is immutable.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods to create. The schema is generated
	// schemaless (no pod field is ever pruned); a few fields are declared by
	// apis/crd-patches/clonesets.apps.kruise.io.yaml for the rules above.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are PVCs created per pod (named <vct>-<cloneset>-<instance-id>).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ScaleStrategy tunes scaling.
	// +kubebuilder:default={}
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// UpdateStrategy tunes rolling updates.
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// MinReadySeconds a pod must be ready before it counts as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Lifecycle hooks (preDelete, inPlaceUpdate, preNormal).
	// +optional
	Lifecycle *appspub.Lifecycle `json:"lifecycle,omitempty"`

	// ProgressDeadlineSeconds after which a stalled rollout is reported with
	// a Progressing=False condition (reason ProgressDeadlineExceeded).
	// MaxInt32 disables the check.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy tunes scaling of a CloneSet.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete; the controller drops names of pods
	// that no longer exist. Names are unique.
	// +listType=set
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable limits pod creation during scale-up to keep the number
	// of unavailable pods below this value (percentages round up).
	// Unset means no limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.scaleStrategy.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// DisablePVCReuse deletes the PVCs of deleted pods instead of reusing them.
	// +optional
	DisablePVCReuse bool `json:"disablePVCReuse,omitempty"`
}

// CloneSetUpdateStrategyType is how pods are updated.
// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly;OnDelete
type CloneSetUpdateStrategyType string

const (
	// RecreateCloneSetUpdateStrategyType deletes and recreates pods.
	RecreateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetUpdateStrategyType updates in place when the
	// change allows it and recreates otherwise.
	InPlaceIfPossibleCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetUpdateStrategyType only updates in place.
	InPlaceOnlyCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceOnly"
	// OnDeleteCloneSetUpdateStrategyType never updates pods; new pods get the
	// new revision (OpenKruise v1.9+).
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetUpdateStrategy tunes how a CloneSet updates its pods.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'InPlaceOnly' || !has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.updateStrategy.maxSurge must be 0 when spec.updateStrategy.type is InPlaceOnly"
type CloneSetUpdateStrategy struct {
	// Type of update.
	// +kubebuilder:default=ReCreate
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`

	// Partition is the number (or percentage, rounded up) of pods kept at
	// the current revision.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.partition must be >= 0"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable during update (round up if maxSurge is 0, else down).
	// +kubebuilder:default="20%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is the number of extra pods allowed during update (round up).
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.maxSurge must be >= 0"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Paused stops updating pods (scaling continues).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// PriorityStrategy orders pods to update.
	// +optional
	PriorityStrategy *appspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads updates of pods carrying given labels; each
	// key/value pair at most once.
	// +listType=map
	// +listMapKey=key
	// +listMapKey=value
	// +optional
	ScatterStrategy appspub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`

	// InPlaceUpdateStrategy tunes in-place updates.
	// +optional
	InPlaceUpdateStrategy *appspub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetStatus is the observed state of a CloneSet.
type CloneSetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Replicas is the number of pods owned.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready pods.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the number of available pods.
	AvailableReplicas int32 `json:"availableReplicas"`
	// UpdatedReplicas is the number of pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready pods at the update revision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
	// UpdatedAvailableReplicas is the number of available pods at the update revision.
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// ExpectedUpdatedReplicas is replicas minus the computed partition.
	// +optional
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`
	// UpdateRevision is the revision name of the current template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the revision name of the last completed rollout.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// CollisionCount counts revision hash collisions.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions of the CloneSet.
	// +optional
	Conditions []CloneSetCondition `json:"conditions,omitempty"`
	// LabelSelector is the selector in string form (scale subresource / HPA).
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSetConditionType is a CloneSet condition type.
type CloneSetConditionType string

const (
	// CloneSetConditionFailedScale reports errors while scaling.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate reports errors while updating.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
	// CloneSetConditionTypeProgressing reports rollout progress.
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
)

// Reasons of the Progressing condition.
const (
	CloneSetProgressAvailable          = "CloneSetAvailable"
	CloneSetProgressPaused             = "CloneSetPaused"
	CloneSetProgressPartitionAvailable = "ProgressPartitionAvailable"
	CloneSetProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	CloneSetProgressUpdated            = "CloneSetUpdated"
)

// CloneSetCondition is one condition of a CloneSet.
type CloneSetCondition struct {
	Type   CloneSetConditionType  `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=clone
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="UPDATED_READY",type="integer",JSONPath=".status.updatedReadyReplicas",description="The number of pods updated and ready."
// +kubebuilder:printcolumn:name="UPDATED_AVAILABLE",type="integer",JSONPath=".status.updatedAvailableReplicas",description="The number of pods updated and available."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of the pod template."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of the pod template."
// +kubebuilder:printcolumn:name="SELECTOR",type="string",priority=1,JSONPath=".status.labelSelector",description="The label selector."
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: the pods' label controller-revision-hash is <name>-<hash of up to 10 characters> and a label value has at most 63"

// CloneSet manages a set of interchangeable pods with in-place update,
// partitioned rollout and selective deletion. Its name has at most 52
// characters (pub.MaxWorkloadNameLength).
type CloneSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloneSetSpec   `json:"spec,omitempty"`
	Status CloneSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// CloneSetList is a list of CloneSets.
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}
