// Package v1alpha1 contains the apps.kruise.io/v1alpha1 API types.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io
package v1alpha1
