// Package register builds the scheme registration every API group/version package of this module exports, so
// that a package's register.go states only its group, version and kinds.
package register

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group returns what a group/version package exports: its GroupVersion; the SchemeBuilder registering kinds
// (each kind and its list) under it, with the meta/v1 types (ListOptions, WatchEvent, …) every served
// group/version needs, and that builder's AddToScheme; and the functions qualifying a resource or kind name
// with the group.
func Group(group, version string, kinds ...runtime.Object) (
	gv schema.GroupVersion,
	builder runtime.SchemeBuilder,
	addToScheme func(*runtime.Scheme) error,
	resource func(resource string) schema.GroupResource,
	kind func(kind string) schema.GroupKind,
) {
	gv = schema.GroupVersion{Group: group, Version: version}
	builder = runtime.NewSchemeBuilder(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(gv, kinds...)
		metav1.AddToGroupVersion(scheme, gv)
		return nil
	})
	resource = func(r string) schema.GroupResource { return gv.WithResource(r).GroupResource() }
	kind = func(k string) schema.GroupKind { return gv.WithKind(k).GroupKind() }
	return gv, builder, builder.AddToScheme, resource, kind
}
