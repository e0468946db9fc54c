package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeImage is the per-node work list of image pre-download, as OpenKruise v1.9 defines it: one object per Node,
// cluster-scoped and named after the node. The manager (controllers/imagepulljob) writes spec — which images and
// tags the node should hold, and on whose behalf — and the node agent (probe-agent, gate ImagePullJobGate) pulls
// them through the CRI image service and writes status, one entry per image tag.
//
// What the agent reads, per spec.images[<image name without tag>].tags[i]:
//   - tag: the tag to pull (the image reference is "<image>:<tag>"; a tag that is a digest "sha256:…" is pulled
//     as "<image>@<tag>");
//   - version: bumped by the manager whenever it wants the tag pulled again; the agent echoes the version it
//     handled in status.imageStatuses[<image>].tags[i].version, and a status whose version is older than the
//     spec's is stale;
//   - pullPolicy.backoffLimit (retries), pullPolicy.timeoutSeconds (per attempt),
//     pullPolicy.activeDeadlineSeconds (from createdAt; past it the task fails);
//   - imagePullPolicy: Always pulls even when the image is present;
//   - ownerReferences: the ImagePullJobs that asked (informational for the agent);
//
// and spec.images[<image>].pullSecrets: the Secrets (of type kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg) to pull with, each a namespace/name the agent may read. The manager copies every secret
// a job names into the agent's namespace (flotilla-node), so the references here always point there; the agent
// needs get on those secrets only.
type NodeImageSpec struct {
	// Images maps an image name (without tag) to the tags to pull on this node. At most 256 images per node.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Images map[string]ImageSpec `json:"images,omitempty"`
}

// ImageSpec is what a node should pull of one image.
type ImageSpec struct {
	// PullSecrets are the secrets (namespace/name) to pull this image with.
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty"`

	// Tags are the versions of this image to pull; a tag appears at most once.
	// +listType=map
	// +listMapKey=tag
	Tags []ImageTagSpec `json:"tags"`

	// SandboxConfig is passed to the runtime's PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`
}

// ReferenceObject names a namespaced object ("<namespace>/<name>").
type ReferenceObject struct {
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// Mode "batch" marks a secret reference kept per image (shared by every job naming the secret) rather than
	// per job; such references are removed together with the image entry. OpenKruise v1.9 serves this field at
	// v1beta1 only; Flotilla serves it at both versions (identical schemas, conversion strategy None).
	// +optional
	Mode string `json:"mode,omitempty"`
}

// ReferenceObjectModeBatch is ReferenceObject.Mode for a per-image secret reference.
const ReferenceObjectModeBatch = "batch"

// String renders the reference as "namespace/name" (or "name" without a namespace).
func (r *ReferenceObject) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// ImageTagSpec is one tag of an image to pull.
type ImageTagSpec struct {
	// Tag to pull.
	// +kubebuilder:validation:MinLength=1
	Tag string `json:"tag"`

	// CreatedAt is when this tag was first asked for; activeDeadlineSeconds counts from it.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`

	// PullPolicy tunes the pull of this tag.
	// +kubebuilder:default={}
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty"`

	// OwnerReferences are the objects (ImagePullJobs) that asked for this tag.
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty"`

	// Version changes whenever the tag must be pulled again; the puller reports the version it handled.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Version int64 `json:"version,omitempty"`

	// ImagePullPolicy: Always pulls even if the image is present; IfNotPresent (the default) does not.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImageTagPullPolicy tunes the pull of one tag.
type ImageTagPullPolicy struct {
	// TimeoutSeconds per pull attempt.
	// +kubebuilder:default=600
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// BackoffLimit is the number of retries before the task fails.
	// +kubebuilder:default=3
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// TTLSecondsAfterFinished: the tag is removed from the spec this long after its task finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// ActiveDeadlineSeconds: the task fails when still unfinished this long after createdAt.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// NodeImageStatus is what the node's puller reports.
type NodeImageStatus struct {
	// Desired is the number of pull tasks (tags in spec).
	Desired int32 `json:"desired"`

	// Succeeded is the number of tasks in phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// Failed is the number of tasks in phase Failed.
	// +optional
	Failed int32 `json:"failed"`

	// Pulling is the number of tasks in phase Pulling.
	// +optional
	Pulling int32 `json:"pulling"`

	// Waiting is the number of tasks in phase Waiting.
	// +optional
	Waiting int32 `json:"waiting"`

	// ImageStatuses maps an image name (as in spec.images) to the status of its tags.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty"`

	// FirstSyncStatus is when (and how) all the node's tasks first finished.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty"`
}

// ImageStatus is the status of the tags of one image.
type ImageStatus struct {
	// Tags holds one entry per tag.
	Tags []ImageTagStatus `json:"tags"`
}

// ImageTagStatus is the status of the pull of one tag.
type ImageTagStatus struct {
	// Tag is the tag.
	Tag string `json:"tag"`

	// Phase of the pull task.
	Phase ImagePullPhase `json:"phase"`

	// Progress in percent (0-100); it may go back when a pull is retried.
	// +optional
	Progress int32 `json:"progress,omitempty"`

	// StartTime is when the puller took the task.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the task finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Version is the spec version of the tag this status is about.
	// +optional
	Version int64 `json:"version,omitempty"`

	// ImageID is the pulled image's ID.
	// +optional
	ImageID string `json:"imageID,omitempty"`

	// Message explains the phase (the last error of a failed pull).
	// +optional
	Message string `json:"message,omitempty"`
}

// ImagePullPhase is the phase of one pull task.
type ImagePullPhase string

// The phases of a pull task.
const (
	ImagePhaseWaiting   ImagePullPhase = "Waiting"
	ImagePhasePulling   ImagePullPhase = "Pulling"
	ImagePhaseSucceeded ImagePullPhase = "Succeeded"
	ImagePhaseFailed    ImagePullPhase = "Failed"
)

// SyncStatus summarises the first completion of all the node's tasks.
type SyncStatus struct {
	// +optional
	SyncAt metav1.Time `json:"syncAt,omitempty"`
	// +optional
	Status SyncStatusPhase `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncStatusPhase is the outcome in SyncStatus.
type SyncStatusPhase string

// The outcomes of SyncStatus.
const (
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	SyncStatusFailed    SyncStatusPhase = "Failed"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="Number of all images on this node"
// +kubebuilder:printcolumn:name="PULLING",type="integer",JSONPath=".status.pulling",description="Number of image pull task active"
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Number of image pull task succeeded"
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Number of image pull tasks failed"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// NodeImage lists the images one node should pull (spec) and how the pulls went (status). See NodeImageSpec.
type NodeImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeImageSpec   `json:"spec,omitempty"`
	Status NodeImageStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeImage `json:"items"`
}
