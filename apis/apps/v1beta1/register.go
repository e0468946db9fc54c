package v1beta1

import "github.com/flotilla-dev/flotilla/apis/internal/register"

// GroupName is the API group of this package.
const GroupName = "apps.kruise.io"

// SchemeGroupVersion is the group/version of this package (GroupVersion in kubebuilder's naming). SchemeBuilder
// registers its kinds, each with its list, and AddToScheme adds them to a scheme. Resource and Kind qualify a
// resource or kind name with the group.
var SchemeGroupVersion, SchemeBuilder, AddToScheme, Resource, Kind = register.Group(GroupName, "v1beta1",
	&StatefulSet{}, &StatefulSetList{}, &DaemonSet{}, &DaemonSetList{}, &SidecarSet{}, &SidecarSetList{},
	&AdvancedCronJob{}, &AdvancedCronJobList{}, &BroadcastJob{}, &BroadcastJobList{}, &ImagePullJob{}, &ImagePullJobList{},
	&NodeImage{}, &NodeImageList{},
)

// GroupVersion is SchemeGroupVersion (kubebuilder naming).
var GroupVersion = SchemeGroupVersion
