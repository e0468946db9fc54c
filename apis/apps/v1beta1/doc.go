// Package v1beta1 contains the apps.kruise.io/v1beta1 API types.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io
package v1beta1
