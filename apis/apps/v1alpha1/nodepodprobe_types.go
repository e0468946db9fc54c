package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePodProbeSpec lists the probes the node daemon must run on one node.
type NodePodProbeSpec struct {
	// +optional
	PodProbes []PodProbe `json:"podProbes,omitempty"`
}

// PodProbe lists the probes of one pod.
type PodProbe struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	// IP is the pod IP used by tcpSocket/httpGet probes.
	// +optional
	IP string `json:"IP,omitempty"`
	// +optional
	Probes []ContainerProbe `json:"probes,omitempty"`
}

// ContainerProbe is one probe of one container.
type ContainerProbe struct {
	// Name is "<podprobemarker>#<probe>".
	Name          string             `json:"name"`
	ContainerName string             `json:"containerName"`
	Probe         ContainerProbeSpec `json:"probe"`
}

// NodePodProbeStatus reports probe results.
type NodePodProbeStatus struct {
	// +optional
	PodProbeStatuses []PodProbeStatus `json:"podProbeStatuses,omitempty"`
}

// PodProbeStatus reports the probe results of one pod.
type PodProbeStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	// +optional
	ProbeStates []ContainerProbeState `json:"probeStates,omitempty"`
}

// ContainerProbeState is the result of one probe.
type ContainerProbeState struct {
	Name  string     `json:"name"`
	State ProbeState `json:"state"`
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster

// NodePodProbe is the per-node (name = node name) list of pod probes and
// their results, shared between the controller and the node daemon.
type NodePodProbe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePodProbeSpec   `json:"spec,omitempty"`
	Status NodePodProbeStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodePodProbeList is a list of NodePodProbes.
type NodePodProbeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePodProbe `json:"items"`
}
