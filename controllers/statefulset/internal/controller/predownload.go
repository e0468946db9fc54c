package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/predownload"
)

// jobWorkload is the set as kit/predownload's ImagePullJobs see it: with
// gate PreDownloadImageForInPlaceUpdate, nodes pull the images of an
// in-place rollout ahead of it, as for CloneSet.
func jobWorkload(set *appsv1beta1.StatefulSet) predownload.Workload {
	return predownload.Workload{Owner: set, Kind: kindStatefulSet, Selector: set.Spec.Selector, Template: &set.Spec.Template}
}

// preDownloadInput states the set's rollout in kit/predownload's terms. As
// in OpenKruise, OnDelete, a missing rollingUpdate and podUpdatePolicy
// ReCreate all count as recreating, and the partition is the absolute
// spec value.
func preDownloadInput(set *appsv1beta1.StatefulSet, current, update *appsv1.ControllerRevision) predownload.Input {
	in := predownload.Input{
		Current:              current,
		Update:               update,
		Replicas:             ptr.Deref(set.Spec.Replicas, 1),
		Recreate:             true,
		MaxUnavailable:       intstr.FromInt32(1),
		Annotations:          set.Annotations,
		StatusUpdateRevision: set.Status.UpdateRevision,
		UpdatedReadyReplicas: set.Status.UpdatedReadyReplicas,
	}
	us := set.Spec.UpdateStrategy
	if ru := us.RollingUpdate; ru != nil && us.Type != appsv1.OnDeleteStatefulSetStrategyType {
		in.Recreate = ru.PodUpdatePolicy == appsv1beta1.RecreatePodUpdateStrategyType || ru.PodUpdatePolicy == ""
		in.Partition = int(ptr.Deref(ru.Partition, 0))
		if ru.MaxUnavailable != nil {
			in.MaxUnavailable = *ru.MaxUnavailable
		}
	}
	return in
}
