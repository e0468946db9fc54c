package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// SidecarSetSpec is the desired state of a SidecarSet.
//
// podInjectPolicy defaults differ between containers (BeforeAppContainer)
// and initContainers (AfterAppContainer), so they are applied by the
// SidecarSet webhook/controller, not by the schema.
//
// +kubebuilder:validation:XValidation:rule="(has(self.containers) && size(self.containers) > 0) || (has(self.initContainers) && size(self.initContainers) > 0)",message="spec.containers: at least one sidecar container must be defined"
type SidecarSetSpec struct {
	// Selector selects the pods to inject into and update.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must set matchLabels or matchExpressions"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// NamespaceSelector restricts the SidecarSet to matching namespaces.
	// v1alpha1's spec.namespace: <ns> is the selector
	// {matchLabels: {kubernetes.io/metadata.name: <ns>}} here.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected at pod creation only.
	// +optional
	InitContainers []SidecarContainer `json:"initContainers,omitempty"`

	// Containers are the sidecar containers.
	// +optional
	Containers []SidecarContainer `json:"containers,omitempty"`

	// Volumes are merged into the pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// UpdateStrategy controls in-place sidecar updates.
	// +kubebuilder:default={}
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy controls injection at pod creation.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// ImagePullSecrets are merged into the pod at creation.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions to keep.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PatchPodMetadata patches pod annotations at injection (and in-place update).
	// +optional
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`

	// CustomVersion is a user version of this SidecarSet, written onto its
	// ControllerRevisions as label apps.kruise.io/sidecarset-custom-version
	// (v1alpha1: that label on the SidecarSet), hence a label value.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	CustomVersion string `json:"customVersion,omitempty"`
}

// SidecarContainer is a container plus SidecarSet-specific settings.
type SidecarContainer struct {
	corev1.Container `json:",inline"`

	// PodInjectPolicy places the sidecar before or after the app containers.
	// +optional
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`

	// UpgradeStrategy is how the sidecar is upgraded.
	// +kubebuilder:default={}
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// ShareVolumePolicy mounts the app containers' volumes into the sidecar.
	// +kubebuilder:default={}
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`

	// ShareVolumeDevicePolicy shares the app containers' volume devices.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`

	// TransferEnv copies env vars from app containers.
	// +optional
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`

	// ResourcesPolicy computes sidecar resources from the app containers
	// (creation only; exclusive with resources).
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// PodInjectPolicyType is where a sidecar is injected.
// +kubebuilder:validation:Enum=BeforeAppContainer;AfterAppContainer
type PodInjectPolicyType string

const (
	// BeforeAppContainerType prepends the sidecar.
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	// AfterAppContainerType appends the sidecar.
	AfterAppContainerType PodInjectPolicyType = "AfterAppContainer"
)

// SidecarContainerUpgradeType is how a sidecar is upgraded.
// +kubebuilder:validation:Enum=ColdUpgrade;HotUpgrade
// +kubebuilder:validation:MaxLength=16
type SidecarContainerUpgradeType string

const (
	// SidecarContainerColdUpgrade restarts the sidecar with the new image.
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	// SidecarContainerHotUpgrade runs two containers and hands over.
	SidecarContainerHotUpgrade SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy is how a sidecar is upgraded.
// A HotUpgrade sidecar also needs hotUpgradeEmptyImage; that is checked by
// the SidecarSet controller, because a CEL rule here runs once per container
// of an unbounded list and exceeds the API server's cost budget.
type SidecarContainerUpgradeStrategy struct {
	// +kubebuilder:default=ColdUpgrade
	// +optional
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`
	// HotUpgradeEmptyImage is the image of the idle twin container.
	// +optional
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}

// ShareVolumePolicyType enables or disables volume sharing.
// +kubebuilder:validation:Enum=enabled;disabled
type ShareVolumePolicyType string

const (
	// ShareVolumePolicyEnabled shares volumes.
	ShareVolumePolicyEnabled ShareVolumePolicyType = "enabled"
	// ShareVolumePolicyDisabled does not share volumes.
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// ShareVolumePolicy enables or disables volume sharing.
type ShareVolumePolicy struct {
	// +kubebuilder:default=disabled
	// +optional
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// TransferEnvVar copies env vars from an app container.
type TransferEnvVar struct {
	// +optional
	SourceContainerName string `json:"sourceContainerName,omitempty"`
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`
	// +optional
	EnvName string `json:"envName,omitempty"`
	// +optional
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource reads the source container name from pod metadata.
type SourceContainerNameSource struct {
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// TargetContainerModeType aggregates target container resources.
// +kubebuilder:validation:Enum=sum;max
type TargetContainerModeType string

const (
	// TargetContainerModeSum sums the targets' resources.
	TargetContainerModeSum TargetContainerModeType = "sum"
	// TargetContainerModeMax takes the targets' maximum.
	TargetContainerModeMax TargetContainerModeType = "max"
)

// ResourcesPolicy computes sidecar resources from app containers.
type ResourcesPolicy struct {
	TargetContainerMode TargetContainerModeType `json:"targetContainersMode"`
	// +kubebuilder:default=".*"
	// +optional
	TargetContainersNameRegex string       `json:"targetContainersNameRegex,omitempty"`
	ResourceExpr              ResourceExpr `json:"resourcesExpr"`
}

// ResourceExpr holds resource expressions.
type ResourceExpr struct {
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits are limit expressions.
type ResourceExprLimits struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests are request expressions.
type ResourceExprRequests struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// SidecarSetUpdateStrategyType is the SidecarSet update type.
// +kubebuilder:validation:Enum=NotUpdate;RollingUpdate
type SidecarSetUpdateStrategyType string

const (
	// NotUpdateSidecarSetStrategyType never updates injected pods.
	NotUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "NotUpdate"
	// RollingUpdateSidecarSetStrategyType updates injected pods in place.
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
)

// SidecarSetUpdateStrategy controls in-place sidecar updates.
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.partition) || (type(self.partition) == int ? self.partition == 0 : self.partition == '0%')",message="spec.updateStrategy.partition and spec.updateStrategy.selector are mutually exclusive"
type SidecarSetUpdateStrategy struct {
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`

	// Paused stops updating pods (injection continues).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Selector limits updates to matching pods.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number (or percentage, rounded up) of matched pods
	// kept at the old sidecar version.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.partition must be >= 0"
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable pods during the update (round up).
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="spec.updateStrategy.maxUnavailable must be >= 0"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PriorityStrategy orders pods to update.
	// +optional
	PriorityStrategy *appspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads updates; value "*" means every distinct value.
	// +optional
	ScatterStrategy appspub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// SidecarSetInjectionStrategy controls injection.
type SidecarSetInjectionStrategy struct {
	// Paused stops injecting into new pods.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Revision injects a specific historic revision.
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevisionPolicy decides when the pinned revision is used.
// +kubebuilder:validation:Enum=Always;Partial
type SidecarSetInjectRevisionPolicy string

const (
	// AlwaysSidecarSetInjectRevisionPolicy always injects the pinned revision.
	AlwaysSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Always"
	// PartialSidecarSetInjectRevisionPolicy mixes the pinned and latest
	// revisions following updateStrategy selector/partition.
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetInjectRevision pins the injected revision. Whether the named
// revision exists needs other objects: the SidecarSet validating webhook
// checks it.
// +kubebuilder:validation:XValidation:rule="has(self.revisionName) || has(self.customVersion)",message="spec.injectionStrategy.revision: set revisionName or customVersion"
type SidecarSetInjectRevision struct {
	// CustomVersion picks the newest revision labelled with this custom version.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty"`
	// RevisionName picks a ControllerRevision by name.
	// +optional
	RevisionName *string `json:"revisionName,omitempty"`
	// +kubebuilder:default=Always
	// +optional
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetPatchPolicyType is how annotations are patched.
// +kubebuilder:validation:Enum=Retain;Overwrite;MergePatchJson
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy only adds missing keys.
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy overwrites existing values.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJsonPatchPolicy JSON-merges values (RFC 7386).
	SidecarSetMergePatchJsonPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarSetPatchPodMetadata patches pod annotations.
type SidecarSetPatchPodMetadata struct {
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +kubebuilder:default=Retain
	// +optional
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetStatus is the observed state of a SidecarSet.
type SidecarSetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	MatchedPods        int32 `json:"matchedPods"`
	UpdatedPods        int32 `json:"updatedPods"`
	ReadyPods          int32 `json:"readyPods"`
	// +optional
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`
	// LatestRevision is the name of the latest ControllerRevision.
	// +optional
	LatestRevision string `json:"latestRevision,omitempty"`
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions are Flotilla's own (OpenKruise's status has none; its
	// clients ignore the field): WebhookInScope, True once the admission
	// webhook's match conditions cover this object (kit/webhook).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods matched."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods matched and updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of pods matched and ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:storageversion

// SidecarSet injects sidecar containers into matching pods and updates
// them in place. v1alpha1 is served too,
// converted by apis/apps/conversion.
type SidecarSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SidecarSetSpec   `json:"spec,omitempty"`
	Status SidecarSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
