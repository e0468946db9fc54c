// Package v1alpha1 contains the policy.kruise.io/v1alpha1 API types.
//
// +k8s:deepcopy-gen=package
// +groupName=policy.kruise.io
package v1alpha1
