package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// Labels and annotations a UnitedDeployment writes on its subset workloads and their pod templates (OpenKruise's
// keys, so tooling written for OpenKruise finds them).
const (
	// SubSetNameLabelKey names the subset a workload (and its pods) belongs to.
	SubSetNameLabelKey = "apps.kruise.io/subset-name"
	// UnitedDeploymentRevisionLabelKey carries the UnitedDeployment's ControllerRevision name on each subset
	// workload and its pod template. It is not the plain "controller-revision-hash" the subset workloads themselves
	// put on their pods, so the two revisions never overwrite each other.
	UnitedDeploymentRevisionLabelKey = "apps.kruise.io/controller-revision-hash"
	// AnnotationSubsetPatchKey records on a subset workload the subset patch last applied to it.
	AnnotationSubsetPatchKey = "apps.kruise.io/subset-patch"
)

// UpdateStrategyType is the update strategy of a UnitedDeployment.
// +kubebuilder:validation:Enum=Manual;""
type UpdateStrategyType string

const (
	// ManualUpdateStrategyType: the user sets a partition per subset.
	ManualUpdateStrategyType UpdateStrategyType = "Manual"
)

// UnitedDeploymentConditionType is a condition type of a UnitedDeployment.
type UnitedDeploymentConditionType string

const (
	// SubsetProvisioned: the subset workloads were created or deleted as the topology asks.
	SubsetProvisioned UnitedDeploymentConditionType = "SubsetProvisioned"
	// SubsetUpdated: every subset workload carries the expected revision, replicas and partition.
	SubsetUpdated UnitedDeploymentConditionType = "SubsetUpdated"
	// SubsetFailure: a subset workload reports a failure.
	SubsetFailure UnitedDeploymentConditionType = "SubsetFailure"
	// UnitedDeploymentUpdated: the current revision is the update revision.
	UnitedDeploymentUpdated UnitedDeploymentConditionType = "UnitedDeploymentUpdated"
)

// UnitedDeploymentSpec is the desired state of a UnitedDeployment.
//
// The rules below are the checks of OpenKruise's UnitedDeployment webhook that need no other object. The subset
// templates are schemaless (see SubsetTemplate), so what is wrong inside them is reported by the API server when the
// controller creates the subset workload (condition SubsetProvisioned=False with that message).
//
// +kubebuilder:validation:XValidation:rule="[has(self.template.statefulSetTemplate), has(self.template.advancedStatefulSetTemplate), has(self.template.cloneSetTemplate), has(self.template.deploymentTemplate)].filter(x, x).size() == 1",message="spec.template: should provide exactly one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",fieldPath=".template"
// +kubebuilder:validation:XValidation:rule="!has(self.topology.subsets) || !self.topology.subsets.exists(s, has(s.replicas)) || !self.topology.subsets.exists(s, has(s.minReplicas) || has(s.maxReplicas))",message="spec.topology.subsets: subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment",fieldPath=".topology.subsets"
// +kubebuilder:validation:XValidation:rule="has(self.replicas) || !has(self.topology.subsets) || self.topology.subsets.all(s, has(s.replicas) && type(s.replicas) == int)",message="spec.topology.subsets: if UnitedDeployment replicas is not provided, replicas of all subsets should be provided as integers",fieldPath=".topology.subsets"
// +kubebuilder:validation:XValidation:rule="has(self.replicas) || !has(self.topology.subsets) || !self.topology.subsets.exists(s, has(s.minReplicas) || has(s.maxReplicas))",message="spec.replicas must be not empty if you set subset.minReplicas/maxReplicas",fieldPath=".replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.topology.subsets) || self.topology.subsets.filter(s, has(s.replicas)).map(s, type(s.replicas) == int ? s.replicas : (self.replicas * int(string(s.replicas).split('%')[0]) + 50) / 100).sum() <= self.replicas",message="spec.topology.subsets: sum of indicated subset replicas should not be greater than UnitedDeployment replicas",fieldPath=".topology.subsets"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.topology.subsets) || size(self.topology.subsets) == 0 || !self.topology.subsets.all(s, has(s.replicas)) || self.topology.subsets.map(s, type(s.replicas) == int ? s.replicas : (self.replicas * int(string(s.replicas).split('%')[0]) + 50) / 100).sum() == self.replicas",message="spec.topology.subsets: if replicas of all subsets are provided, the sum of indicated subset replicas should equal UnitedDeployment replicas",fieldPath=".topology.subsets"
// +kubebuilder:validation:XValidation:rule="!has(self.topology.subsets) || size(self.topology.subsets) == 0 || !self.topology.subsets.exists(s, has(s.minReplicas) || has(s.maxReplicas)) || self.topology.subsets.exists(s, !has(s.maxReplicas))",message="spec.topology.subsets: at least one subset.maxReplicas must be empty",fieldPath=".topology.subsets"
// +kubebuilder:validation:XValidation:rule="!has(self.topology.scheduleStrategy) || !has(self.topology.scheduleStrategy.type) || self.topology.scheduleStrategy.type != 'Adaptive' || !has(self.topology.scheduleStrategy.adaptive) || !has(self.topology.scheduleStrategy.adaptive.reserveUnschedulablePods) || !self.topology.scheduleStrategy.adaptive.reserveUnschedulablePods || !(has(self.template.statefulSetTemplate) || has(self.template.advancedStatefulSetTemplate))",message="spec.topology.scheduleStrategy: only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",fieldPath=".topology.scheduleStrategy"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy.manualUpdate) || !has(self.updateStrategy.manualUpdate.partitions) || self.updateStrategy.manualUpdate.partitions.all(k, has(self.topology.subsets) && self.topology.subsets.exists(s, s.name == k))",message="spec.updateStrategy.manualUpdate.partitions: every key must name a subset in spec.topology.subsets",fieldPath=".updateStrategy.manualUpdate.partitions"
type UnitedDeploymentSpec struct {
	// Replicas is the total number of pods over all subsets. Unset, every subset must set its replicas.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector selects the pods of this UnitedDeployment; it must match the template's labels. Each subset workload
	// selects with it plus apps.kruise.io/subset-name.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector: empty selector is invalid for UnitedDeployment"
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the workload every subset is created from: exactly one of its fields.
	// +optional
	Template SubsetTemplate `json:"template,omitempty"`

	// Topology lists the subsets (node pools) the pods are spread over.
	// +kubebuilder:default={}
	// +optional
	Topology Topology `json:"topology,omitempty"`

	// UpdateStrategy controls how a template change rolls out over the subsets.
	// +kubebuilder:default={type: Manual, manualUpdate: {}}
	// +optional
	UpdateStrategy UnitedDeploymentUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// SubsetTemplate holds the template of the subset workloads: exactly one field is set.
//
// Each template is stored schemaless (type object, unknown fields preserved), as OpenKruise does for most of them:
// four embedded workload specs with pod templates would push the CRD towards the API server's size limit, and the
// workload's own API validates the spec when the controller creates it.
type SubsetTemplate struct {
	// StatefulSetTemplate makes each subset an apps/v1 StatefulSet.
	// +optional
	StatefulSetTemplate *StatefulSetTemplateSpec `json:"statefulSetTemplate,omitempty"`

	// AdvancedStatefulSetTemplate makes each subset an Advanced StatefulSet (apps.kruise.io/v1beta1).
	// +optional
	AdvancedStatefulSetTemplate *AdvancedStatefulSetTemplateSpec `json:"advancedStatefulSetTemplate,omitempty"`

	// CloneSetTemplate makes each subset a CloneSet.
	// +optional
	CloneSetTemplate *CloneSetTemplateSpec `json:"cloneSetTemplate,omitempty"`

	// DeploymentTemplate makes each subset an apps/v1 Deployment.
	// +optional
	DeploymentTemplate *DeploymentTemplateSpec `json:"deploymentTemplate,omitempty"`
}

// StatefulSetTemplateSpec is the subset template of a StatefulSet.
type StatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec appsv1.StatefulSetSpec `json:"spec"`
}

// AdvancedStatefulSetTemplateSpec is the subset template of an Advanced StatefulSet.
type AdvancedStatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec appsv1beta1.StatefulSetSpec `json:"spec"`
}

// CloneSetTemplateSpec is the subset template of a CloneSet.
type CloneSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec CloneSetSpec `json:"spec"`
}

// DeploymentTemplateSpec is the subset template of a Deployment.
type DeploymentTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// UnitedDeploymentUpdateStrategy is how a template change reaches the subsets.
type UnitedDeploymentUpdateStrategy struct {
	// Type of the update strategy; Manual is the only one.
	// +kubebuilder:default=Manual
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
	// ManualUpdate holds the partitions of the Manual strategy.
	// +kubebuilder:default={}
	// +optional
	ManualUpdate *ManualUpdate `json:"manualUpdate,omitempty"`
}

// ManualUpdate sets a partition per subset: the number of that subset's pods kept at the old revision.
type ManualUpdate struct {
	// Partitions by subset name. A subset without an entry has partition 0.
	// +kubebuilder:validation:MaxProperties=100
	// +optional
	Partitions map[string]int32 `json:"partitions,omitempty"`
}

// Topology lists the subsets.
// +kubebuilder:validation:XValidation:rule="!has(self.scheduleStrategy) || !has(self.scheduleStrategy.type) || self.scheduleStrategy.type != 'Adaptive' || !has(self.subsets) || self.subsets.all(s, !has(s.replicas))",message="spec.topology.subsets: specify replicas use minReplicas/maxReplicas to enable adaptive strategy",fieldPath=".subsets"
type Topology struct {
	// Subsets are the node pools, each one workload. Names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Subsets []Subset `json:"subsets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy is Fixed (the default) or Adaptive: pods that stay unschedulable in a subset are moved to the
	// next ones (reserveUnschedulablePods is not carried out: see the controller's README).
	// +optional
	ScheduleStrategy UnitedDeploymentScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// Subset is one node pool.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || type(self.minReplicas) != int || type(self.maxReplicas) != int || self.minReplicas <= self.maxReplicas",message="subset minReplicas must be less than or equal to maxReplicas",fieldPath=".minReplicas"
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelectorTerm) == has(oldSelf.nodeSelectorTerm) && (!has(self.nodeSelectorTerm) || self.nodeSelectorTerm == oldSelf.nodeSelectorTerm)",message="spec.topology.subsets[].nodeSelectorTerm may not be changed in an update",fieldPath=".nodeSelectorTerm"
// +kubebuilder:validation:XValidation:rule="has(self.tolerations) == has(oldSelf.tolerations) && (!has(self.tolerations) || self.tolerations == oldSelf.tolerations)",message="spec.topology.subsets[].tolerations may not be changed in an update",fieldPath=".tolerations"
type Subset struct {
	// Name of the subset, a DNS label; part of the subset workload's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// NodeSelectorTerm is added (AND) to every required node-affinity term of the subset's pods.
	// +optional
	NodeSelectorTerm corev1.NodeSelectorTerm `json:"nodeSelectorTerm,omitempty"`

	// Tolerations are appended to the subset's pods' tolerations.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Replicas of this subset: an integer, or a percentage of spec.replicas ("30%", rounded half up).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="subset replicas should not be less than 0"
	// +optional
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`

	// MinReplicas this subset gets first (elastic allocation), an integer or a percentage of spec.replicas.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="subset minReplicas should not be less than 0"
	// +optional
	MinReplicas *intstr.IntOrString `json:"minReplicas,omitempty"`

	// MaxReplicas this subset gets at most (elastic allocation); unset means no limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="subset maxReplicas should not be less than 0"
	// +optional
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`

	// Patch is a strategic merge patch applied to the subset's pod template (e.g. per-zone resources or env).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// UnitedDeploymentScheduleStrategyType is the schedule strategy type.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type UnitedDeploymentScheduleStrategyType string

const (
	// AdaptiveUnitedDeploymentScheduleStrategyType moves pods away from subsets that cannot schedule them.
	AdaptiveUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Adaptive"
	// FixedUnitedDeploymentScheduleStrategyType keeps the computed split whatever happens to the pods.
	FixedUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Fixed"
)

// AdaptiveUnitedDeploymentStrategy tunes the Adaptive strategy.
type AdaptiveUnitedDeploymentStrategy struct {
	// RescheduleCriticalSeconds a pod may stay pending before its subset counts as unschedulable.
	// +optional
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`
	// UnschedulableDuration a subset stays unschedulable.
	// +optional
	UnschedulableDuration *int32 `json:"unschedulableDuration,omitempty"`
	// ReserveUnschedulablePods keeps the pending pods instead of deleting them.
	// +optional
	ReserveUnschedulablePods bool `json:"reserveUnschedulablePods,omitempty"`
}

// UnitedDeploymentScheduleStrategy is the schedule strategy.
type UnitedDeploymentScheduleStrategy struct {
	// Type is Fixed (default) or Adaptive.
	// +optional
	Type UnitedDeploymentScheduleStrategyType `json:"type,omitempty"`
	// Adaptive tunes the Adaptive strategy.
	// +optional
	Adaptive *AdaptiveUnitedDeploymentStrategy `json:"adaptive,omitempty"`
}

// UnitedDeploymentStatus is the observed state of a UnitedDeployment.
type UnitedDeploymentStatus struct {
	// ObservedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas over all subsets.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Replicas over all subsets.
	Replicas int32 `json:"replicas"`
	// UpdatedReplicas: pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReservedPods (Adaptive strategy with reserved pods; always 0 here).
	// +optional
	ReservedPods int32 `json:"reservedPods,omitempty"`
	// UpdatedReadyReplicas: ready pods at the update revision.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// CollisionCount disambiguates ControllerRevision names on a hash collision.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// CurrentRevision is the revision every pod had when the last rollout finished.
	CurrentRevision string `json:"currentRevision"`
	// SubsetReplicas is the computed split: replicas by subset name.
	// +optional
	SubsetReplicas map[string]int32 `json:"subsetReplicas,omitempty"`
	// SubsetStatuses by subset.
	// +optional
	SubsetStatuses []UnitedDeploymentSubsetStatus `json:"subsetStatuses,omitempty"`
	// Conditions of the UnitedDeployment.
	// +optional
	Conditions []UnitedDeploymentCondition `json:"conditions,omitempty"`
	// UpdateStatus is the progress of the current rollout.
	// +optional
	UpdateStatus *UpdateStatus `json:"updateStatus,omitempty"`
	// LabelSelector is spec.selector as a string, for the scale subresource.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// UnitedDeploymentCondition is one condition of a UnitedDeployment.
type UnitedDeploymentCondition struct {
	// Type of the condition.
	Type UnitedDeploymentConditionType `json:"type,omitempty"`
	// Status: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status,omitempty"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason in one word.
	Reason string `json:"reason,omitempty"`
	// Message for humans.
	Message string `json:"message,omitempty"`
}

// UpdateStatus is the progress of a rollout.
type UpdateStatus struct {
	// UpdatedRevision is the revision being rolled out.
	// +optional
	UpdatedRevision string `json:"updatedRevision,omitempty"`
	// CurrentPartitions by subset.
	// +optional
	CurrentPartitions map[string]int32 `json:"currentPartitions,omitempty"`
}

// UnitedDeploymentSubsetStatus is the status of one subset.
type UnitedDeploymentSubsetStatus struct {
	// Name of the subset.
	// +optional
	Name string `json:"name,omitempty"`
	// Replicas of the subset workload.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas of the subset workload.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Partition set on the subset workload.
	// +optional
	Partition int32 `json:"partition,omitempty"`
	// ReservedPods (Adaptive strategy; always 0 here).
	// +optional
	ReservedPods int32 `json:"reservedPods,omitempty"`
	// Conditions of the subset.
	// +optional
	Conditions []UnitedDeploymentSubsetCondition `json:"conditions,omitempty"`
}

// UnitedDeploymentSubsetConditionType is a condition type of a subset.
type UnitedDeploymentSubsetConditionType string

const (
	// UnitedDeploymentSubsetSchedulable: new pods of the subset can be scheduled (Adaptive strategy).
	UnitedDeploymentSubsetSchedulable UnitedDeploymentSubsetConditionType = "Schedulable"
)

// UnitedDeploymentSubsetCondition is one condition of a subset.
type UnitedDeploymentSubsetCondition struct {
	Type               UnitedDeploymentSubsetConditionType `json:"type"`
	Status             corev1.ConditionStatus              `json:"status"`
	LastTransitionTime metav1.Time                         `json:"lastTransitionTime,omitempty"`
	Reason             string                              `json:"reason,omitempty"`
	Message            string                              `json:"message,omitempty"`
}

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:shortName=ud
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// UnitedDeployment runs one workload over several node pools (subsets), each subset a CloneSet, Advanced
// StatefulSet, StatefulSet or Deployment.
type UnitedDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UnitedDeploymentSpec   `json:"spec,omitempty"`
	Status UnitedDeploymentStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// UnitedDeploymentList is a list of UnitedDeployments.
type UnitedDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UnitedDeployment `json:"items"`
}
