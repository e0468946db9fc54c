package pub

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// InPlaceUpdateReady is the readiness gate / pod condition owned by the
	// in-place update machinery. It is False while an in-place update runs.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

	// InPlaceUpdateStateKey is the pod annotation holding the JSON-encoded
	// InPlaceUpdateState of the last in-place update.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"
	// InPlaceUpdateStateKeyOld is the legacy (pre-prefix) name of the same annotation.
	InPlaceUpdateStateKeyOld = "inplace-update-state"
	// InPlaceUpdateGraceKey is the pod annotation holding the pending update
	// spec while an in-place update waits out its grace period.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"
	// RuntimeContainerMetaKey is the pod annotation written by the node daemon
	// with per-container runtime metadata (RuntimeContainerMetaSet JSON).
	RuntimeContainerMetaKey = "apps.kruise.io/runtime-containers-meta"
)

// InPlaceUpdateState is stored JSON-encoded in the pod annotation
// apps.kruise.io/inplace-update-state. Field names are part of the wire
// contract: other components (PUB, SidecarSet, tooling) read them.
type InPlaceUpdateState struct {
	// Revision is the revision the pod is being updated to.
	Revision string `json:"revision"`
	// UpdateTimestamp is when the update started.
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	// LastContainerStatuses records, per container name, the status seen
	// before the update (used to detect that the new image is running).
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses"`
	// UpdateEnvFromMetadata is true when containers must be restarted because
	// env vars sourced from labels/annotations changed.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`
	// UpdateImages is true when the update changes container images.
	UpdateImages bool `json:"updateImages,omitempty"`
	// UpdateResources is true when the update changes container resources.
	UpdateResources bool `json:"updateResources,omitempty"`
	// NextContainerImages are images still to apply in a later batch.
	NextContainerImages map[string]string `json:"nextContainerImages,omitempty"`
	// NextContainerRefMetadata is metadata still to apply in a later batch.
	NextContainerRefMetadata map[string]metav1.ObjectMeta `json:"nextContainerRefMetadata,omitempty"`
	// NextContainerResources are resources still to apply in a later batch.
	NextContainerResources map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty"`
	// PreCheckBeforeNext must hold before the next batch is applied.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty"`
	// ContainerBatchesRecord records the batches already applied.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty"`
}

// InPlaceUpdatePreCheckBeforeNext lists conditions for applying the next batch.
type InPlaceUpdatePreCheckBeforeNext struct {
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty"`
}

// InPlaceUpdateContainerBatch is one applied batch of container updates.
type InPlaceUpdateContainerBatch struct {
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []string    `json:"containers"`
}

// InPlaceUpdateContainerStatus is the pre-update status of one container.
type InPlaceUpdateContainerStatus struct {
	ImageID string `json:"imageID,omitempty"`
	// Resources is only recorded for in-place resource updates.
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`
}

// InPlaceUpdateStrategy tunes in-place updates of a workload.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is the time between marking the pod not-ready
	// (InPlaceUpdateReady=False) and actually patching its containers.
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
}

// RuntimeContainerMetaSet is the JSON stored in RuntimeContainerMetaKey.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers"`
}

// RuntimeContainerMeta is runtime metadata about one running container.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name"`
	ContainerID  string                 `json:"containerID"`
	RestartCount int32                  `json:"restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes"`
}

// RuntimeContainerHashes are container hashes computed on the node.
type RuntimeContainerHashes struct {
	// PlainHash is the kubelet hash of the container spec.
	PlainHash uint64 `json:"plainHash"`
	// PlainHashWithoutResources is the same hash ignoring resources.
	PlainHashWithoutResources uint64 `json:"plainHashWithoutResources,omitempty"`
	// ExtractedEnvFromMetadataHash hashes env values sourced from metadata.
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty"`
}

// GetInPlaceUpdateState returns the in-place update state annotation,
// falling back to the legacy key.
func GetInPlaceUpdateState(obj metav1.Object) (string, bool) {
	if v, ok := obj.GetAnnotations()[InPlaceUpdateStateKey]; ok {
		return v, true
	}
	v, ok := obj.GetAnnotations()[InPlaceUpdateStateKeyOld]
	return v, ok
}

// GetInPlaceUpdateGrace returns the grace-period annotation.
func GetInPlaceUpdateGrace(obj metav1.Object) (string, bool) {
	v, ok := obj.GetAnnotations()[InPlaceUpdateGraceKey]
	return v, ok
}
