package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BroadcastJobSpec is the desired state of a BroadcastJob.
type BroadcastJobSpec struct {
	// Parallelism is the maximum number of pods running at once
	// (default: unlimited).
	// +kubebuilder:default=2147483647
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="parallelism must be >= 0"
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// Template is the pod run on every eligible node.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template corev1.PodTemplateSpec `json:"template"`

	// CompletionPolicy decides when the job is finished.
	// +kubebuilder:default={}
	// +optional
	CompletionPolicy CompletionPolicy `json:"completionPolicy,omitempty"`

	// Paused stops creating pods.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// FailurePolicy decides what a failed pod does to the job.
	// +kubebuilder:default={}
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// CompletionPolicyType decides whether a job ever finishes.
// +kubebuilder:validation:Enum=Always;Never
type CompletionPolicyType string

const (
	// Always: the job finishes when all pods finish (or the deadline passes).
	Always CompletionPolicyType = "Always"
	// Never: the job keeps running and follows new nodes.
	Never CompletionPolicyType = "Never"
)

// CompletionPolicy decides when a job is finished and cleaned up.
type CompletionPolicy struct {
	// +kubebuilder:default=Always
	// +optional
	Type CompletionPolicyType `json:"type,omitempty"`
	// ActiveDeadlineSeconds after the start time the job is failed (Always only).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// TTLSecondsAfterFinished deletes the job that long after it finished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// FailurePolicyType is what a pod failure does to a BroadcastJob.
// +kubebuilder:validation:Enum=Continue;FailFast;Pause
type FailurePolicyType string

const (
	// FailurePolicyTypeContinue ignores failed pods.
	FailurePolicyTypeContinue FailurePolicyType = "Continue"
	// FailurePolicyTypeFailFast fails the job on the first pod failure.
	FailurePolicyTypeFailFast FailurePolicyType = "FailFast"
	// FailurePolicyTypePause pauses the job on the first pod failure.
	FailurePolicyTypePause FailurePolicyType = "Pause"
)

// FailurePolicy is what pod failures do to a BroadcastJob.
type FailurePolicy struct {
	// +kubebuilder:default=FailFast
	// +optional
	Type FailurePolicyType `json:"type,omitempty"`
	// RestartLimit is the number of retries per node before a pod counts as failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RestartLimit int32 `json:"restartLimit,omitempty"`
}

// BroadcastJobStatus is the observed state of a BroadcastJob.
type BroadcastJobStatus struct {
	// +optional
	Conditions []JobCondition `json:"conditions,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	Active         int32        `json:"active"`
	Succeeded      int32        `json:"succeeded"`
	Failed         int32        `json:"failed"`
	// Desired is the number of nodes the job should run on.
	Desired int32 `json:"desired"`
	// +optional
	Phase BroadcastJobPhase `json:"phase,omitempty"`
}

// BroadcastJobPhase is the phase of a BroadcastJob.
type BroadcastJobPhase string

const (
	PhaseCompleted BroadcastJobPhase = "completed"
	PhaseRunning   BroadcastJobPhase = "running"
	PhasePaused    BroadcastJobPhase = "paused"
	PhaseFailed    BroadcastJobPhase = "failed"
)

// JobConditionType is a BroadcastJob condition type.
type JobConditionType string

const (
	// JobComplete means the job finished successfully.
	JobComplete JobConditionType = "Complete"
	// JobFailed means the job failed.
	JobFailed JobConditionType = "Failed"
)

// JobCondition is one condition of a BroadcastJob.
type JobCondition struct {
	Type   JobConditionType       `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
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
// +kubebuilder:storageversion

// BroadcastJob runs a pod to completion on every eligible node.
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BroadcastJobSpec   `json:"spec,omitempty"`
	Status BroadcastJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// BroadcastJobList is a list of BroadcastJobs.
type BroadcastJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BroadcastJob `json:"items"`
}
