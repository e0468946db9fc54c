package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "apps.kruise.io"

var (
	// SchemeGroupVersion is the group/version of this package.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}
	// GroupVersion is an alias of SchemeGroupVersion (kubebuilder naming).
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns a GroupResource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// Kind returns a GroupKind of this group.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&StatefulSet{}, &StatefulSetList{},
		&DaemonSet{}, &DaemonSetList{},
		&SidecarSet{}, &SidecarSetList{},
		&AdvancedCronJob{}, &AdvancedCronJobList{},
		&BroadcastJob{}, &BroadcastJobList{},
		&ImagePullJob{}, &ImagePullJobList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
