package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdvancedCronJobSpec is the desired state of an AdvancedCronJob.
//
// When timeZone is unset the schedule is interpreted in the controller's
// local time zone (left to the controller).
//
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || !self.schedule.contains('TZ=')",message="spec.schedule must not contain TZ= or CRON_TZ= when spec.timeZone is set"
type AdvancedCronJobSpec struct {
	// Schedule in cron format (robfig/cron standard parser). The pattern rejects what can never parse (wrong
	// field count, unknown descriptor) at admission; value ranges are checked by the controller.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^\s*((CRON_)?TZ=\S+\s+)?(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every\s+\S+|[^@\s]\S*(\s+\S+){4})\s*$`
	Schedule string `json:"schedule"`

	// TimeZone is an IANA time zone name; "Local" is not allowed. Unknown names are rejected at admission: the
	// last rule asks CEL to read a time in that zone, which fails for a name missing from the API server's time
	// zone database.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self != 'Local'",message="spec.timeZone must be an IANA time zone name, not Local"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$')",message="spec.timeZone must be an IANA time zone name such as Etc/UTC or Asia/Shanghai"
	// +kubebuilder:validation:XValidation:rule="timestamp('2000-01-01T12:00:00Z').getFullYear(self) == 2000",message="spec.timeZone must be a known IANA time zone name"
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`

	// StartingDeadlineSeconds: a run missed by more than this is skipped.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// ConcurrencyPolicy decides what happens when runs overlap.
	// +kubebuilder:default=Allow
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// Paused stops scheduling new runs.
	// +kubebuilder:default=false
	// +optional
	Paused *bool `json:"paused,omitempty"`

	// SuccessfulJobsHistoryLimit is the number of finished successful children kept.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// FailedJobsHistoryLimit is the number of failed children kept.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`

	// Template is the child to create; immutable after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.template is immutable"
	Template CronJobTemplate `json:"template"`
}

// ConcurrencyPolicy decides what happens when runs overlap.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// AllowConcurrent runs overlapping children.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ForbidConcurrent skips a run while a child is active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// ReplaceConcurrent deletes active children before a new run.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// CronJobTemplate holds exactly one child template.
//
// imageListPullJobTemplate is OpenKruise v1beta1's third kind of child.
// Flotilla does not serve ImageListPullJob, so the field is refused at
// admission; it is in the schema (of both versions, which keeps them
// identical) so that an AdvancedCronJob OpenKruise stored with it is
// neither pruned nor unreadable. An unchanged stored value passes
// (validation ratcheting) and spec.template is immutable anyway.
// +kubebuilder:validation:XValidation:rule="has(self.jobTemplate) != has(self.broadcastJobTemplate)",message="spec.template: exactly one of jobTemplate and broadcastJobTemplate must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.imageListPullJobTemplate)",message="spec.template.imageListPullJobTemplate is not supported: Flotilla does not serve ImageListPullJob",fieldPath=".imageListPullJobTemplate"
type CronJobTemplate struct {
	// JobTemplate creates batch/v1 Jobs.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	JobTemplate *batchv1.JobTemplateSpec `json:"jobTemplate,omitempty"`

	// BroadcastJobTemplate creates BroadcastJobs.
	// +optional
	BroadcastJobTemplate *BroadcastJobTemplateSpec `json:"broadcastJobTemplate,omitempty"`

	// ImageListPullJobTemplate would create ImageListPullJobs (not
	// supported, see above).
	// +optional
	ImageListPullJobTemplate *ImageListPullJobTemplateSpec `json:"imageListPullJobTemplate,omitempty"`
}

// ImageListPullJobTemplateSpec is the template of an ImageListPullJob
// (OpenKruise's shape; only kept, never run, by Flotilla).
type ImageListPullJobTemplateSpec struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec ImageListPullJobSpec `json:"spec,omitempty"`
}

// ImageListPullJobSpec pulls a list of images on selected nodes.
type ImageListPullJobSpec struct {
	// Images to pull.
	Images []string `json:"images"`

	ImagePullJobTemplate `json:",inline"`
}

// BroadcastJobTemplateSpec is the template of a BroadcastJob.
type BroadcastJobTemplateSpec struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec BroadcastJobSpec `json:"spec,omitempty"`
}

// TemplateKind is the kind of children an AdvancedCronJob creates
// (ImageListPullJob: OpenKruise v1beta1 only, never written by Flotilla).
// +kubebuilder:validation:Enum=Job;BroadcastJob;ImageListPullJob
type TemplateKind string

const (
	// JobTemplate children are batch/v1 Jobs.
	JobTemplate TemplateKind = "Job"
	// BroadcastJobTemplate children are BroadcastJobs.
	BroadcastJobTemplate TemplateKind = "BroadcastJob"
)

// AdvancedCronJobStatus is the observed state of an AdvancedCronJob.
type AdvancedCronJobStatus struct {
	// Type is the kind of children (kubectl-kruise relies on it).
	// +optional
	Type TemplateKind `json:"type,omitempty"`
	// Active lists running children.
	// +optional
	Active []corev1.ObjectReference `json:"active,omitempty"`
	// LastScheduleTime is the last time a child was scheduled.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// Conditions report what the controller cannot schedule, e.g. ScheduleValid=False with reason
	// InvalidSchedule. A Flotilla addition: OpenKruise's status has no conditions; clients that do not know the
	// field ignore it.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdvancedCronJobScheduleValid is the condition type saying whether schedule and timeZone can be used.
const AdvancedCronJobScheduleValid = "ScheduleValid"

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

	Spec   AdvancedCronJobSpec   `json:"spec,omitempty"`
	Status AdvancedCronJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// AdvancedCronJobList is a list of AdvancedCronJobs.
type AdvancedCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdvancedCronJob `json:"items"`
}
