package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// The kinds whose apps.kruise.io/v1alpha1 is served with exactly the shape of the storage version v1beta1:
// StatefulSet, AdvancedCronJob, BroadcastJob, ImagePullJob and NodeImage. Their CRDs use conversion strategy None, so the API
// server only rewrites apiVersion, and reading or writing an object through either version loses nothing. Sharing
// the spec and status types (rather than copying them) keeps the two schemas identical by construction; only the
// root types, which carry each version's CRD markers, are declared here. OpenKruise's own v1alpha1 StatefulSet is a
// subset of this shape, and so is its v1alpha1 NodeImage (which lacks spec.images[*].pullSecrets[*].mode).
//
// DaemonSet and SidecarSet differ between the versions (apis/apps/conversion converts them), each only in some
// types: daemonset_types.go and sidecarset_types.go declare those, and use v1beta1's for the rest.

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=acj
// +kubebuilder:printcolumn:name="Schedule",type="string",JSONPath=".spec.schedule",description="The schedule of this cron job."
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".status.type",description="The type of the job template."
// +kubebuilder:printcolumn:name="LastScheduleTime",type="date",JSONPath=".status.lastScheduleTime",description="The last time a job was scheduled."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// AdvancedCronJob creates Jobs or BroadcastJobs on a cron schedule.
type AdvancedCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   appsv1beta1.AdvancedCronJobSpec   `json:"spec,omitempty"`
	Status appsv1beta1.AdvancedCronJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// AdvancedCronJobList is a list of AdvancedCronJobs.
type AdvancedCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdvancedCronJob `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bcj
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desired",description="The desired number of pods (usually the number of eligible nodes)."
// +kubebuilder:printcolumn:name="Active",type="integer",JSONPath=".status.active",description="The number of actively running pods."
// +kubebuilder:printcolumn:name="Succeeded",type="integer",JSONPath=".status.succeeded",description="The number of pods which reached phase Succeeded."
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failed",description="The number of pods which reached phase Failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// BroadcastJob runs a pod to completion on every eligible node.
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   appsv1beta1.BroadcastJobSpec   `json:"spec,omitempty"`
	Status appsv1beta1.BroadcastJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// BroadcastJobList is a list of BroadcastJobs.
type BroadcastJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BroadcastJob `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="Number of all nodes matched by this job"
// +kubebuilder:printcolumn:name="ACTIVE",type="integer",JSONPath=".status.active",description="Number of running pull tasks"
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of pull tasks which reached phase Succeeded"
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of pull tasks which reached phase Failed"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="Summary of the job status"

// ImagePullJob pulls an image on a set of nodes.
type ImagePullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   appsv1beta1.ImagePullJobSpec   `json:"spec,omitempty"`
	Status appsv1beta1.ImagePullJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ImagePullJobList is a list of ImagePullJobs.
type ImagePullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePullJob `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="Number of all images on this node"
// +kubebuilder:printcolumn:name="PULLING",type="integer",JSONPath=".status.pulling",description="Number of image pull task active"
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of image pull task succeeded"
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of image pull tasks failed"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// NodeImage lists the images one node should pull (spec) and how the pulls went (status). See
// appsv1beta1.NodeImageSpec for what the node agent reads.
type NodeImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   appsv1beta1.NodeImageSpec   `json:"spec,omitempty"`
	Status appsv1beta1.NodeImageStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeImage `json:"items"`
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
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: the pods' label controller-revision-hash is <name>-<hash of up to 10 characters> and a label value has at most 63"

// StatefulSet (Advanced StatefulSet) is a StatefulSet with in-place update,
// reserved ordinals, lifecycle hooks and parallel rolling updates. Its name
// has at most 52 characters (pub.MaxWorkloadNameLength).
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   appsv1beta1.StatefulSetSpec   `json:"spec,omitempty"`
	Status appsv1beta1.StatefulSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// StatefulSetList is a list of StatefulSets.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}

// The v1beta1 types that v1alpha1 shares, under their v1alpha1 names for Go callers (no doc comment on the
// block: the generators would prepend it to the v1beta1 types' own).

type (
	AdvancedCronJobSpec             = appsv1beta1.AdvancedCronJobSpec
	ConcurrencyPolicy               = appsv1beta1.ConcurrencyPolicy
	CronJobTemplate                 = appsv1beta1.CronJobTemplate
	ImageListPullJobTemplateSpec    = appsv1beta1.ImageListPullJobTemplateSpec
	ImageListPullJobSpec            = appsv1beta1.ImageListPullJobSpec
	BroadcastJobTemplateSpec        = appsv1beta1.BroadcastJobTemplateSpec
	TemplateKind                    = appsv1beta1.TemplateKind
	AdvancedCronJobStatus           = appsv1beta1.AdvancedCronJobStatus
	BroadcastJobSpec                = appsv1beta1.BroadcastJobSpec
	CompletionPolicyType            = appsv1beta1.CompletionPolicyType
	CompletionPolicy                = appsv1beta1.CompletionPolicy
	FailurePolicyType               = appsv1beta1.FailurePolicyType
	FailurePolicy                   = appsv1beta1.FailurePolicy
	BroadcastJobStatus              = appsv1beta1.BroadcastJobStatus
	BroadcastJobPhase               = appsv1beta1.BroadcastJobPhase
	JobConditionType                = appsv1beta1.JobConditionType
	JobCondition                    = appsv1beta1.JobCondition
	ImagePullJobSpec                = appsv1beta1.ImagePullJobSpec
	ImagePullJobTemplate            = appsv1beta1.ImagePullJobTemplate
	ImagePullPolicy                 = appsv1beta1.ImagePullPolicy
	ImagePullJobPodSelector         = appsv1beta1.ImagePullJobPodSelector
	ImagePullJobNodeSelector        = appsv1beta1.ImagePullJobNodeSelector
	PullPolicy                      = appsv1beta1.PullPolicy
	SandboxConfig                   = appsv1beta1.SandboxConfig
	ImagePullJobStatus              = appsv1beta1.ImagePullJobStatus
	NodeImageSpec                   = appsv1beta1.NodeImageSpec
	ImageSpec                       = appsv1beta1.ImageSpec
	ReferenceObject                 = appsv1beta1.ReferenceObject
	ImageTagSpec                    = appsv1beta1.ImageTagSpec
	ImageTagPullPolicy              = appsv1beta1.ImageTagPullPolicy
	NodeImageStatus                 = appsv1beta1.NodeImageStatus
	ImageStatus                     = appsv1beta1.ImageStatus
	ImageTagStatus                  = appsv1beta1.ImageTagStatus
	ImagePullPhase                  = appsv1beta1.ImagePullPhase
	SyncStatus                      = appsv1beta1.SyncStatus
	SyncStatusPhase                 = appsv1beta1.SyncStatusPhase
	SidecarContainer                = appsv1beta1.SidecarContainer
	PodInjectPolicyType             = appsv1beta1.PodInjectPolicyType
	SidecarContainerUpgradeType     = appsv1beta1.SidecarContainerUpgradeType
	SidecarContainerUpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy
	ShareVolumePolicyType           = appsv1beta1.ShareVolumePolicyType
	ShareVolumePolicy               = appsv1beta1.ShareVolumePolicy
	TransferEnvVar                  = appsv1beta1.TransferEnvVar
	SourceContainerNameSource       = appsv1beta1.SourceContainerNameSource
	TargetContainerModeType         = appsv1beta1.TargetContainerModeType
	ResourcesPolicy                 = appsv1beta1.ResourcesPolicy
	ResourceExpr                    = appsv1beta1.ResourceExpr
	ResourceExprLimits              = appsv1beta1.ResourceExprLimits
	ResourceExprRequests            = appsv1beta1.ResourceExprRequests
	SidecarSetUpdateStrategyType    = appsv1beta1.SidecarSetUpdateStrategyType
	SidecarSetUpdateStrategy        = appsv1beta1.SidecarSetUpdateStrategy
	SidecarSetInjectionStrategy     = appsv1beta1.SidecarSetInjectionStrategy
	SidecarSetInjectRevisionPolicy  = appsv1beta1.SidecarSetInjectRevisionPolicy
	SidecarSetInjectRevision        = appsv1beta1.SidecarSetInjectRevision
	SidecarSetPatchPolicyType       = appsv1beta1.SidecarSetPatchPolicyType
	SidecarSetPatchPodMetadata      = appsv1beta1.SidecarSetPatchPodMetadata
	SidecarSetStatus                = appsv1beta1.SidecarSetStatus
	DaemonSetUpdateStrategyType     = appsv1beta1.DaemonSetUpdateStrategyType
)

// The constants of those types.
const (
	AllowConcurrent                       = appsv1beta1.AllowConcurrent
	ForbidConcurrent                      = appsv1beta1.ForbidConcurrent
	ReplaceConcurrent                     = appsv1beta1.ReplaceConcurrent
	JobTemplate                           = appsv1beta1.JobTemplate
	BroadcastJobTemplate                  = appsv1beta1.BroadcastJobTemplate
	AdvancedCronJobScheduleValid          = appsv1beta1.AdvancedCronJobScheduleValid
	Always                                = appsv1beta1.Always
	Never                                 = appsv1beta1.Never
	FailurePolicyTypeContinue             = appsv1beta1.FailurePolicyTypeContinue
	FailurePolicyTypeFailFast             = appsv1beta1.FailurePolicyTypeFailFast
	FailurePolicyTypePause                = appsv1beta1.FailurePolicyTypePause
	PhaseCompleted                        = appsv1beta1.PhaseCompleted
	PhaseRunning                          = appsv1beta1.PhaseRunning
	PhasePaused                           = appsv1beta1.PhasePaused
	PhaseFailed                           = appsv1beta1.PhaseFailed
	JobComplete                           = appsv1beta1.JobComplete
	JobFailed                             = appsv1beta1.JobFailed
	PullAlways                            = appsv1beta1.PullAlways
	PullIfNotPresent                      = appsv1beta1.PullIfNotPresent
	ReferenceObjectModeBatch              = appsv1beta1.ReferenceObjectModeBatch
	ImagePhaseWaiting                     = appsv1beta1.ImagePhaseWaiting
	ImagePhasePulling                     = appsv1beta1.ImagePhasePulling
	ImagePhaseSucceeded                   = appsv1beta1.ImagePhaseSucceeded
	ImagePhaseFailed                      = appsv1beta1.ImagePhaseFailed
	SyncStatusSucceeded                   = appsv1beta1.SyncStatusSucceeded
	SyncStatusFailed                      = appsv1beta1.SyncStatusFailed
	BeforeAppContainerType                = appsv1beta1.BeforeAppContainerType
	AfterAppContainerType                 = appsv1beta1.AfterAppContainerType
	SidecarContainerColdUpgrade           = appsv1beta1.SidecarContainerColdUpgrade
	SidecarContainerHotUpgrade            = appsv1beta1.SidecarContainerHotUpgrade
	ShareVolumePolicyEnabled              = appsv1beta1.ShareVolumePolicyEnabled
	ShareVolumePolicyDisabled             = appsv1beta1.ShareVolumePolicyDisabled
	TargetContainerModeSum                = appsv1beta1.TargetContainerModeSum
	TargetContainerModeMax                = appsv1beta1.TargetContainerModeMax
	NotUpdateSidecarSetStrategyType       = appsv1beta1.NotUpdateSidecarSetStrategyType
	RollingUpdateSidecarSetStrategyType   = appsv1beta1.RollingUpdateSidecarSetStrategyType
	AlwaysSidecarSetInjectRevisionPolicy  = appsv1beta1.AlwaysSidecarSetInjectRevisionPolicy
	PartialSidecarSetInjectRevisionPolicy = appsv1beta1.PartialSidecarSetInjectRevisionPolicy
	SidecarSetRetainPatchPolicy           = appsv1beta1.SidecarSetRetainPatchPolicy
	SidecarSetOverwritePatchPolicy        = appsv1beta1.SidecarSetOverwritePatchPolicy
	SidecarSetMergePatchJsonPatchPolicy   = appsv1beta1.SidecarSetMergePatchJsonPatchPolicy
	RollingUpdateDaemonSetStrategyType    = appsv1beta1.RollingUpdateDaemonSetStrategyType
	OnDeleteDaemonSetStrategyType         = appsv1beta1.OnDeleteDaemonSetStrategyType
)
