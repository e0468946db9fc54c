package controller

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/predownload"
)

// jobWorkload is the CloneSet as kit/predownload's ImagePullJobs see it:
// with gate PreDownloadImageForInPlaceUpdate, nodes pull the images of an
// in-place rollout ahead of it, once per update revision, and the jobs are
// deleted once the rollout has converged (failures are logged, never fail
// the sync).
func jobWorkload(cs *appsv1alpha1.CloneSet) predownload.Workload {
	return predownload.Workload{Owner: cs, Kind: kindCloneSet, Selector: cs.Spec.Selector, Template: &cs.Spec.Template}
}

// preDownloadInput states the CloneSet's rollout in kit/predownload's terms:
// the partition as the update path resolves it, maxUnavailable unresolved
// (pre-download rounds it down, the update path up).
func preDownloadInput(st *syncState) predownload.Input {
	cs := st.cs
	us := cs.Spec.UpdateStrategy
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	mu := intstr.FromString(DefaultMaxUnavailable)
	if us.MaxUnavailable != nil {
		mu = *us.MaxUnavailable
	}
	return predownload.Input{
		Current:  st.Current,
		Update:   st.Update,
		Replicas: replicas,
		// "" is the API default, ReCreate.
		Recreate:             us.Type == appsv1alpha1.RecreateCloneSetUpdateStrategyType || us.Type == "",
		Partition:            PartitionReplicas(us.Partition, int(replicas)),
		MaxUnavailable:       mu,
		Annotations:          cs.Annotations,
		StatusUpdateRevision: cs.Status.UpdateRevision,
		UpdatedReadyReplicas: cs.Status.UpdatedReadyReplicas,
	}
}
