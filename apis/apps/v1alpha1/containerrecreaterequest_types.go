package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations of a ContainerRecreateRequest, with OpenKruise's
// keys: the containerrecreaterequest-controller stamps the labels, the node
// agent's informer selects on them, and either side can be OpenKruise's.
const (
	// ContainerRecreateRequestPodUIDKey holds the UID of the pod the request
	// was stamped for; the request fails when the pod by that name has
	// another UID (the pod was recreated).
	ContainerRecreateRequestPodUIDKey = "crr.apps.kruise.io/pod-uid"
	// ContainerRecreateRequestNodeNameKey holds the pod's node: the agent of
	// that node alone watches the request.
	ContainerRecreateRequestNodeNameKey = "crr.apps.kruise.io/node-name"
	// ContainerRecreateRequestActiveKey ("true") is on a request until it
	// completes, so that agents list and watch only unfinished requests.
	ContainerRecreateRequestActiveKey = "crr.apps.kruise.io/active"
	// ContainerRecreateRequestSyncContainerStatusesKey is the annotation where
	// the controller copies the pod's status of the requested containers
	// (JSON list of ContainerRecreateRequestSyncContainerStatus) while the
	// request is Recreating: the agent reads readiness from it.
	ContainerRecreateRequestSyncContainerStatusesKey = "crr.apps.kruise.io/sync-container-statuses"
	// ContainerRecreateRequestUnreadyAcquiredKey is the annotation (RFC 3339
	// time) saying the pod was made NotReady for unreadyGracePeriodSeconds,
	// and the finalizer that keeps the request until the pod is released.
	ContainerRecreateRequestUnreadyAcquiredKey = "crr.apps.kruise.io/unready-acquired"
)

// ContainerRecreateRequestSpec is what to recreate.
// +kubebuilder:validation:XValidation:rule="self.podName == oldSelf.podName && self.containers.size() == oldSelf.containers.size() && self.containers.all(c, oldSelf.containers.exists(o, o.name == c.name && (!has(o.preStop) || (has(c.preStop) && c.preStop == o.preStop)) && (!has(o.ports) || (has(c.ports) && c.ports == o.ports)) && (!has(o.statusContext) || (has(c.statusContext) && c.statusContext == o.statusContext))))",message="spec of ContainerRecreateRequest is immutable"
// +kubebuilder:validation:XValidation:rule="(has(self.activeDeadlineSeconds) ? self.activeDeadlineSeconds : -1) == (has(oldSelf.activeDeadlineSeconds) ? oldSelf.activeDeadlineSeconds : -1) && (has(self.ttlSecondsAfterFinished) ? self.ttlSecondsAfterFinished : -1) == (has(oldSelf.ttlSecondsAfterFinished) ? oldSelf.ttlSecondsAfterFinished : -1)",message="spec of ContainerRecreateRequest is immutable"
type ContainerRecreateRequestSpec struct {
	// PodName is the name of the pod, in the request's namespace, whose
	// containers are recreated.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName"`

	// Containers are the containers to recreate, by name (each once).
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(o, o.name == c.name))",message="spec.containers: a container can not be recreated multi times"
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`

	// Strategy of the recreation.
	// +kubebuilder:default={}
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`

	// ActiveDeadlineSeconds after creation, an unfinished request completes
	// as failed. At least 3 (OpenKruise's minimum).
	// +kubebuilder:validation:Minimum=3
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished after completion, the request is deleted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer is one container to recreate.
type ContainerRecreateRequestContainer struct {
	// Name of the container; it must be one of the pod's spec.containers.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// PreStop is copied from the pod's container by the controller.
	// Read-only: populated by the system.
	// +optional
	PreStop *ProbeHandler `json:"preStop,omitempty"`

	// Ports are copied from the pod's container (for an httpGet preStop).
	// Read-only: populated by the system.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Ports []corev1.ContainerPort `json:"ports,omitempty"`

	// StatusContext is the container's ID and restart count when the
	// request was accepted. Read-only: populated by the system.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// ProbeHandler is a preStop action (OpenKruise's type of that name).
type ProbeHandler struct {
	// Exec runs a command in the container.
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty"`
	// HTTPGet requests a URL of the pod.
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty"`
	// TCPSocket is accepted and, as by the kubelet, does nothing.
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
}

// ContainerRecreateRequestContainerContext is a container's identity when the
// request was accepted.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID in the form '<runtime>://<id>'.
	ContainerID string `json:"containerID"`
	// RestartCount of the container then.
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestStrategy says how to recreate. Immutable, except
// that an unset terminationGracePeriodSeconds may be set (the controller
// copies the pod's).
// +kubebuilder:validation:XValidation:rule="(has(self.failurePolicy) ? self.failurePolicy : 'Fail') == (has(oldSelf.failurePolicy) ? oldSelf.failurePolicy : 'Fail') && (has(self.orderedRecreate) && self.orderedRecreate) == (has(oldSelf.orderedRecreate) && oldSelf.orderedRecreate) && (has(self.forceRecreate) && self.forceRecreate) == (has(oldSelf.forceRecreate) && oldSelf.forceRecreate) && (has(self.unreadyGracePeriodSeconds) ? self.unreadyGracePeriodSeconds : -1) == (has(oldSelf.unreadyGracePeriodSeconds) ? oldSelf.unreadyGracePeriodSeconds : -1) && (has(self.minStartedSeconds) ? self.minStartedSeconds : 0) == (has(oldSelf.minStartedSeconds) ? oldSelf.minStartedSeconds : 0) && (!has(oldSelf.terminationGracePeriodSeconds) || (has(self.terminationGracePeriodSeconds) && self.terminationGracePeriodSeconds == oldSelf.terminationGracePeriodSeconds))",message="spec of ContainerRecreateRequest is immutable"
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy: Fail (default) completes the request when a container
	// fails to recreate; Ignore goes on with the others.
	// +kubebuilder:validation:Enum=Fail;Ignore
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`

	// OrderedRecreate recreates the next container only once the previous
	// one has recreated completely. Serialized even when false (OpenKruise
	// omits it) so that a manifest saying false reads back the same.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate"`

	// ForceRecreate stops the container even if it is still starting.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`

	// TerminationGracePeriodSeconds for the preStop and the stop; unset: the
	// pod's (the controller copies it).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// UnreadyGracePeriodSeconds: the pod is made NotReady (KruisePodReady
	// gate) this long before the preStop and the stop.
	// +kubebuilder:validation:Minimum=0
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`

	// MinStartedSeconds a new container must have been started and ready for
	// its recreation to count as Succeeded.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestFailurePolicyType is Fail or Ignore.
type ContainerRecreateRequestFailurePolicyType string

// Failure policies.
const (
	ContainerRecreateRequestFailurePolicyFail   ContainerRecreateRequestFailurePolicyType = "Fail"
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStatus is the observed state of a request.
type ContainerRecreateRequestStatus struct {
	// Phase: Pending, Recreating, then Completed (OpenKruise's final phase,
	// success or not: the per-container phases say which).
	// +optional
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// CompletionTime of the request.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says why a request completed without recreating.
	// +optional
	Message string `json:"message,omitempty"`
	// ContainerRecreateStates are the per-container states.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`
}

// ContainerRecreateRequestPhase of a request or of one container.
type ContainerRecreateRequestPhase string

// Phases.
const (
	ContainerRecreateRequestPending    ContainerRecreateRequestPhase = "Pending"
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	ContainerRecreateRequestSucceeded  ContainerRecreateRequestPhase = "Succeeded"
	ContainerRecreateRequestFailed     ContainerRecreateRequestPhase = "Failed"
	ContainerRecreateRequestCompleted  ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestContainerRecreateState is one container's state.
type ContainerRecreateRequestContainerRecreateState struct {
	// Name of the container.
	Name string `json:"name"`
	// Phase of its recreation.
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// Message about the state.
	// +optional
	Message string `json:"message,omitempty"`
	// IsKilled: the agent has stopped (or was about to stop) the container.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one entry of the annotation
// crr.apps.kruise.io/sync-container-statuses.
type ContainerRecreateRequestSyncContainerStatus struct {
	Name         string `json:"name"`
	Ready        bool   `json:"ready"`
	RestartCount int32  `json:"restartCount"`
	ContainerID  string `json:"containerID,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=crr
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase",description="Phase of this ContainerRecreateRequest."
// +kubebuilder:printcolumn:name="POD",type="string",JSONPath=".spec.podName",description="Pod name of this ContainerRecreateRequest."
// +kubebuilder:printcolumn:name="NODE",type="string",JSONPath=".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",description="Node name of this ContainerRecreateRequest."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// ContainerRecreateRequest asks the node agent to recreate (stop, and let the
// kubelet start again) some containers of a running pod.
type ContainerRecreateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ContainerRecreateRequestSpec   `json:"spec,omitempty"`
	Status ContainerRecreateRequestStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ContainerRecreateRequestList is a list of ContainerRecreateRequests.
type ContainerRecreateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContainerRecreateRequest `json:"items"`
}
