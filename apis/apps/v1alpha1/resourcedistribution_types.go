package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations the resourcedistribution-controller writes on every copy, with
// OpenKruise's keys, so that copies made by either implementation are read
// the same way.
const (
	// ResourceDistributionHashAnnotation holds the SHA-256 (hex) of the
	// distribution's spec.resource the copy was last written from.
	ResourceDistributionHashAnnotation = "kruise.io/resourcedistribution.resource.hashcode"
	// ResourceDistributionSourceAnnotation holds the name of the
	// ResourceDistribution the copy comes from.
	ResourceDistributionSourceAnnotation = "kruise.io/resourcedistribution.resource.from"
)

// ResourceDistributionSpec is the desired state of a ResourceDistribution.
type ResourceDistributionSpec struct {
	// Resource is the complete Secret or ConfigMap (apiVersion v1) to
	// distribute; its metadata.namespace is ignored. apiVersion, kind and
	// metadata.name are immutable.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:validation:XValidation:rule="self.apiVersion == 'v1' && (self.kind == 'Secret' || self.kind == 'ConfigMap')",message="spec.resource: unsupported resource kind, only v1 Secret and v1 ConfigMap are supported"
	// +kubebuilder:validation:XValidation:rule="has(self.metadata) && has(self.metadata.name) && size(self.metadata.name) > 0",message="spec.resource.metadata.name is required"
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.name) || (size(self.metadata.name) <= 253 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="spec.resource.metadata.name must be a DNS subdomain (lower case alphanumerics, '-' and '.', at most 253 characters)"
	// +kubebuilder:validation:XValidation:rule="self.apiVersion == oldSelf.apiVersion && self.kind == oldSelf.kind && (has(self.metadata) && has(self.metadata.name) ? self.metadata.name : '') == (has(oldSelf.metadata) && has(oldSelf.metadata.name) ? oldSelf.metadata.name : '')",message="spec.resource: apiVersion, kind and metadata.name are immutable"
	Resource runtime.RawExtension `json:"resource"`

	// Targets selects the namespaces the resource is distributed to.
	Targets ResourceDistributionTargets `json:"targets"`
}

// ResourceDistributionTargets selects target namespaces: the union of
// allNamespaces, includedNamespaces and namespaceLabelSelector, minus
// excludedNamespaces (which always wins). As in OpenKruise v1.9,
// allNamespaces means every namespace, kube-system and kube-public included:
// list the ones to skip in excludedNamespaces.
// +kubebuilder:validation:XValidation:rule="!has(self.includedNamespaces) || !has(self.includedNamespaces.list) || !has(self.excludedNamespaces) || !has(self.excludedNamespaces.list) || !sets.intersects(self.includedNamespaces.list.map(i, i.name), self.excludedNamespaces.list.map(e, e.name))",message="spec.targets: ambiguous targets, a namespace is in both includedNamespaces.list and excludedNamespaces.list"
type ResourceDistributionTargets struct {
	// AllNamespaces selects every namespace.
	// +optional
	AllNamespaces bool `json:"allNamespaces,omitempty"`

	// ExcludedNamespaces are never targeted, whatever else selects them.
	// +optional
	ExcludedNamespaces ResourceDistributionTargetNamespaces `json:"excludedNamespaces,omitempty"`

	// IncludedNamespaces are targeted by name (a listed namespace that does
	// not exist is reported in the NamespaceNotExists condition).
	// +optional
	IncludedNamespaces ResourceDistributionTargetNamespaces `json:"includedNamespaces,omitempty"`

	// NamespaceLabelSelector targets the namespaces it matches; an empty
	// selector matches none.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn'] && has(e.values) && size(e.values) > 0) || (e.operator in ['Exists', 'DoesNotExist'] && (!has(e.values) || size(e.values) == 0)))",message="spec.targets.namespaceLabelSelector.matchExpressions: operator must be In or NotIn with values, or Exists or DoesNotExist without values"
	// +optional
	NamespaceLabelSelector metav1.LabelSelector `json:"namespaceLabelSelector,omitempty"`
}

// ResourceDistributionTargetNamespaces is a list of namespace names.
type ResourceDistributionTargetNamespaces struct {
	// List of namespaces.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +kubebuilder:validation:MaxItems=2048
	// +optional
	List []ResourceDistributionNamespace `json:"list,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// ResourceDistributionNamespace names one namespace.
type ResourceDistributionNamespace struct {
	// Name of the namespace: a DNS-1123 label.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`
}

// ResourceDistributionStatus is the observed state of a ResourceDistribution.
type ResourceDistributionStatus struct {
	// Desired is the number of target namespaces.
	// +optional
	Desired int32 `json:"desired,omitempty"`

	// Succeeded is the number of target namespaces holding an up-to-date copy.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// Failed is Desired - Succeeded.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// ObservedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are always the six condition types, in OpenKruise's order;
	// a type is True while some namespace fails that way.
	// +optional
	Conditions []ResourceDistributionCondition `json:"conditions,omitempty"`
}

// ResourceDistributionCondition reports one kind of failure.
type ResourceDistributionCondition struct {
	// Type of the condition.
	Type ResourceDistributionConditionType `json:"type"`

	// Status is True while some namespace fails this way.
	Status ResourceDistributionConditionStatus `json:"status"`

	// LastTransitionTime is when Status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is "Succeeded" when Status is False, else the failure message.
	// +optional
	Reason string `json:"reason,omitempty"`

	// FailedNamespaces are the namespaces failing this way (the JSON name is
	// OpenKruise v1alpha1's, singular).
	// +optional
	FailedNamespaces []string `json:"failedNamespace,omitempty"`
}

// ResourceDistributionConditionType is the type of a ResourceDistributionCondition.
type ResourceDistributionConditionType string

// Condition types, in the order status.conditions lists them.
const (
	// ResourceDistributionGetResourceFailed: reading a copy failed.
	ResourceDistributionGetResourceFailed ResourceDistributionConditionType = "GetResourceFailed"
	// ResourceDistributionCreateResourceFailed: creating a copy failed.
	ResourceDistributionCreateResourceFailed ResourceDistributionConditionType = "CreateResourceFailed"
	// ResourceDistributionUpdateResourceFailed: updating a copy failed.
	ResourceDistributionUpdateResourceFailed ResourceDistributionConditionType = "UpdateResourceFailed"
	// ResourceDistributionDeleteResourceFailed: deleting a copy from a namespace no longer targeted failed.
	ResourceDistributionDeleteResourceFailed ResourceDistributionConditionType = "DeleteResourceFailed"
	// ResourceDistributionConflictOccurred: a target namespace holds an object of the same kind and name that
	// this distribution does not control; it is left alone.
	ResourceDistributionConflictOccurred ResourceDistributionConditionType = "ConflictOccurred"
	// ResourceDistributionNamespaceNotExists: a target namespace does not exist or is terminating.
	ResourceDistributionNamespaceNotExists ResourceDistributionConditionType = "NamespaceNotExists"
)

// ResourceDistributionConditionStatus is True, False or Unknown.
type ResourceDistributionConditionStatus string

// Condition statuses.
const (
	ResourceDistributionConditionTrue    ResourceDistributionConditionStatus = "True"
	ResourceDistributionConditionFalse   ResourceDistributionConditionStatus = "False"
	ResourceDistributionConditionUnknown ResourceDistributionConditionStatus = "Unknown"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=distributor
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="The number of target namespaces."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="The number of namespaces with an up-to-date copy."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="The number of target namespaces without an up-to-date copy."

// ResourceDistribution keeps copies of one Secret or ConfigMap in a set of
// namespaces.
type ResourceDistribution struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceDistributionSpec   `json:"spec,omitempty"`
	Status ResourceDistributionStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ResourceDistributionList is a list of ResourceDistributions.
type ResourceDistributionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceDistribution `json:"items"`
}
