package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodProbeMarkerSpec is the desired state of a PodProbeMarker.
type PodProbeMarkerSpec struct {
	// Selector selects the pods to probe. Immutable.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable"
	Selector *metav1.LabelSelector `json:"selector"`

	// Probes to run; names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.podConditionType) || size(p.podConditionType) == 0 || self.exists_one(q, has(q.podConditionType) && q.podConditionType == p.podConditionType))",message="spec.probes[].podConditionType must be unique"
	Probes []PodContainerProbe `json:"probes"`
}

// PodContainerProbe is one custom probe of a container.
// +kubebuilder:validation:XValidation:rule="!(self.name in ['PodScheduled', 'Initialized', 'Ready', 'ContainersReady', 'KruisePodReady', 'InPlaceUpdateReady'])",message="spec.probes[].name must not be a Kubernetes or Kruise pod condition type",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="(has(self.markerPolicy) && size(self.markerPolicy) > 0) || (has(self.podConditionType) && size(self.podConditionType) > 0)",message="spec.probes[]: at least one of markerPolicy and podConditionType must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.podConditionType) || !(self.podConditionType in ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready', 'PodReadyToStartContainers', 'DisruptionTarget', 'PodResizePending', 'PodResizeInProgress', 'KruisePodReady', 'InPlaceUpdateReady'])",message="spec.probes[].podConditionType must not be a pod condition type Kubernetes or Kruise owns",fieldPath=".podConditionType"
type PodContainerProbe struct {
	// Name of the probe; unique within the PodProbeMarker, no '#'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^#]+$`
	Name string `json:"name"`
	// ContainerName is the container to probe.
	// +kubebuilder:validation:MinLength=1
	ContainerName string `json:"containerName"`
	// Probe is the probe to run (exec, tcpSocket or httpGet). Timings and
	// thresholds may be 0 (the node agent then uses 1); httpGet.scheme must
	// be HTTP or HTTPS, as OpenKruise's webhook requires.
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="probe.exec.command is required",fieldPath=".exec.command"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || (has(self.httpGet.path) && size(self.httpGet.path) > 0)",message="probe.httpGet.path is required",fieldPath=".httpGet.path"
	// +kubebuilder:validation:XValidation:rule="!has(self.initialDelaySeconds) || self.initialDelaySeconds >= 0",message="probe.initialDelaySeconds must not be negative",fieldPath=".initialDelaySeconds"
	// +kubebuilder:validation:XValidation:rule="!has(self.timeoutSeconds) || self.timeoutSeconds >= 0",message="probe.timeoutSeconds must not be negative",fieldPath=".timeoutSeconds"
	// +kubebuilder:validation:XValidation:rule="!has(self.periodSeconds) || self.periodSeconds >= 0",message="probe.periodSeconds must not be negative",fieldPath=".periodSeconds"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || self.successThreshold >= 0",message="probe.successThreshold must not be negative",fieldPath=".successThreshold"
	// +kubebuilder:validation:XValidation:rule="!has(self.failureThreshold) || self.failureThreshold >= 0",message="probe.failureThreshold must not be negative",fieldPath=".failureThreshold"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || (has(self.httpGet.scheme) && self.httpGet.scheme in ['HTTP', 'HTTPS'])",message="probe.httpGet.scheme must be HTTP or HTTPS",fieldPath=".httpGet.scheme"
	Probe ContainerProbeSpec `json:"probe"`
	// MarkerPolicy labels/annotates the pod by probe state.
	// +listType=map
	// +listMapKey=state
	// +kubebuilder:validation:MaxItems=2
	// +optional
	MarkerPolicy []ProbeMarkerPolicy `json:"markerPolicy,omitempty"`
	// PodConditionType is the pod condition reflecting the probe result; a
	// qualified name like a label key.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	PodConditionType string `json:"podConditionType,omitempty"`
}

// ContainerProbeSpec is a corev1.Probe restricted to exec, tcpSocket and
// httpGet handlers without a host.
// +kubebuilder:validation:XValidation:rule="(has(self.exec) ? 1 : 0) + (has(self.tcpSocket) ? 1 : 0) + (has(self.httpGet) ? 1 : 0) == 1 && !has(self.grpc)",message="probe: exactly one of exec, tcpSocket and httpGet must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.httpGet) && has(self.httpGet.host)) && !(has(self.tcpSocket) && has(self.tcpSocket.host))",message="probe: host is not allowed"
type ContainerProbeSpec struct {
	corev1.Probe `json:",inline"`
}

// ProbeState is the result of a probe.
// +kubebuilder:validation:Enum=Succeeded;Failed;Unknown
type ProbeState string

const (
	// ProbeSucceeded means the probe passed.
	ProbeSucceeded ProbeState = "Succeeded"
	// ProbeFailed means the probe failed.
	ProbeFailed ProbeState = "Failed"
	// ProbeUnknown means the result is not known.
	ProbeUnknown ProbeState = "Unknown"
)

// ProbeMarkerPolicy is applied to the pod when the probe is in State.
// +kubebuilder:validation:XValidation:rule="self.state != 'Unknown'",message="markerPolicy[].state must be Succeeded or Failed",fieldPath=".state"
// +kubebuilder:validation:XValidation:rule="(has(self.labels) && size(self.labels) > 0) || (has(self.annotations) && size(self.annotations) > 0)",message="markerPolicy[] must set labels or annotations"
type ProbeMarkerPolicy struct {
	// State is Succeeded or Failed.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	State ProbeState `json:"state"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodProbeMarkerStatus is the observed state of a PodProbeMarker.
type PodProbeMarkerStatus struct {
	ObservedGeneration int64 `json:"observedGeneration"`
	// MatchedPods is the number of pods the probes were placed on.
	// +optional
	MatchedPods int64 `json:"matchedPods,omitempty"`
	// Conditions is Flotilla's addition (OpenKruise's status has none; a
	// client that does not know the field ignores it). probe-controller sets
	// Enabled=False while it runs with PodProbeMarkerGate off, so a marker it
	// does not act on says so; the reconciler drops the condition once it runs.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodProbeMarkerEnabled is the condition type probe-controller writes False
// while PodProbeMarkerGate is off.
const PodProbeMarkerEnabled = "Enabled"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// PodProbeMarker defines custom probes run by the node daemon whose results
// become pod conditions, labels and annotations.
type PodProbeMarker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodProbeMarkerSpec   `json:"spec,omitempty"`
	Status PodProbeMarkerStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodProbeMarkerList is a list of PodProbeMarkers.
type PodProbeMarkerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodProbeMarker `json:"items"`
}
