package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ImagePullJobSpec is the desired state of an ImagePullJob.
type ImagePullJobSpec struct {
	// Image to pull.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	ImagePullJobTemplate `json:",inline"`
}

// ImagePullJobTemplate holds the pull parameters shared with image-list jobs.
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.podSelector)",message="spec.selector and spec.podSelector are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.completionPolicy.type) || self.completionPolicy.type != 'Always' || !has(self.completionPolicy.activeDeadlineSeconds) || self.completionPolicy.activeDeadlineSeconds >= (has(self.pullPolicy) && has(self.pullPolicy.timeoutSeconds) ? self.pullPolicy.timeoutSeconds : 600)",message="spec.completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds (default 600)"
// +kubebuilder:validation:XValidation:rule="!has(self.completionPolicy.type) || self.completionPolicy.type != 'Never' || (!has(self.completionPolicy.activeDeadlineSeconds) && !has(self.completionPolicy.ttlSecondsAfterFinished))",message="spec.completionPolicy: activeDeadlineSeconds and ttlSecondsAfterFinished can only work with type Always"
type ImagePullJobTemplate struct {
	// PullSecrets are names of secrets in the job's namespace.
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty"`

	// Selector chooses nodes by name and/or labels.
	// +optional
	Selector *ImagePullJobNodeSelector `json:"selector,omitempty"`

	// PodSelector chooses the nodes running matching pods.
	// +optional
	PodSelector *ImagePullJobPodSelector `json:"podSelector,omitempty"`

	// Parallelism is the number of nodes pulling at once.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.parallelism must be >= 0"
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// PullPolicy tunes each pull.
	// +kubebuilder:default={}
	// +optional
	PullPolicy *PullPolicy `json:"pullPolicy,omitempty"`

	// CompletionPolicy decides when the job is finished.
	// +kubebuilder:default={}
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// SandboxConfig is passed to the runtime when pulling.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`

	// ImagePullPolicy: Always pulls even if the image is present.
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImagePullPolicy decides whether present images are pulled again.
// +kubebuilder:validation:Enum=Always;IfNotPresent
type ImagePullPolicy string

const (
	// PullAlways always pulls.
	PullAlways ImagePullPolicy = "Always"
	// PullIfNotPresent pulls only missing images.
	PullIfNotPresent ImagePullPolicy = "IfNotPresent"
)

// ImagePullJobPodSelector selects pods whose nodes pull the image.
type ImagePullJobPodSelector struct {
	metav1.LabelSelector `json:",inline"`
}

// ImagePullJobNodeSelector selects nodes by name or by labels (not both, as OpenKruise's webhook requires).
// +kubebuilder:validation:XValidation:rule="!has(self.names) || (!has(self.matchLabels) && !has(self.matchExpressions))",message="spec.selector: names and a label selector are mutually exclusive"
type ImagePullJobNodeSelector struct {
	// Names of nodes, each at most once.
	// +listType=set
	// +optional
	Names                []string `json:"names,omitempty"`
	metav1.LabelSelector `json:",inline"`
}

// PullPolicy tunes each pull.
type PullPolicy struct {
	// TimeoutSeconds per pull attempt.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// BackoffLimit is the number of retries per node.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// SandboxConfig is passed to the runtime when pulling.
type SandboxConfig struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImagePullJobStatus is the observed state of an ImagePullJob.
type ImagePullJobStatus struct {
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	Desired        int32        `json:"desired"`
	// +optional
	Active int32 `json:"active"`
	// +optional
	Succeeded int32 `json:"succeeded"`
	// +optional
	Failed int32 `json:"failed"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty"`
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
// +kubebuilder:storageversion

// ImagePullJob pulls an image on a set of nodes.
type ImagePullJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImagePullJobSpec   `json:"spec,omitempty"`
	Status ImagePullJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ImagePullJobList is a list of ImagePullJobs.
type ImagePullJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePullJob `json:"items"`
}
