package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// inPlaceSpec returns the in-place change that moves pod from its own
// revision to update, or why it cannot be done in place: the pod must carry
// the InPlaceUpdateReady gate (created under InPlaceIfPossible), its
// revision must still exist, and the change must be images and metadata
// only (kit/inplace; a change env reads from metadata only with
// envFromMetadata, the InPlaceUpdateEnvFromMetadata gate). The change is returned with a refusal kit/inplace
// decides, which the API server's copy of the pod may lift (workload.ConfirmAgentRecord).
func inPlaceSpec(pod *corev1.Pod, revisions []*appsv1.ControllerRevision, update *appsv1.ControllerRevision, envFromMetadata bool) (inplace.Spec, string) {
	if !inplace.HasReadinessGate(pod) {
		return inplace.Spec{}, "the pod has no InPlaceUpdateReady readiness gate"
	}
	label := pod.Labels[pub.ControllerRevisionHashLabelKey]
	var from *appsv1.ControllerRevision
	for _, r := range revisions {
		if revision.HashMatches(label, r.Name) {
			from = r
		}
	}
	if from == nil {
		return inplace.Spec{}, "the pod's revision " + label + " is gone"
	}
	spec, ok := inplace.Diff(from.Data.Raw, update.Data.Raw)
	return spec, inplace.RefusalForPod(pod, spec, ok, envFromMetadata)
}

// gatedConditions are the readiness gates this controller injects and
// therefore owns the first condition of.
var gatedConditions = []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType}

// needsGateInit: the pod carries one of our gates without its condition.
func needsGateInit(p *corev1.Pod) bool {
	return podreadiness.MissingGateCondition(p, gatedConditions...)
}

// gateLeftFalse: the pod's InPlaceUpdateReady condition is there and not
// True. With no state annotation that is an update whose pod write never
// landed (a crash or lost Lease between kit/inplace.Update's two writes);
// the refresh sets it True again (kit/inplace.MarkReady), or the pod would
// stay out of Service endpoints for good.
func gateLeftFalse(p *corev1.Pod) bool {
	c := inplace.Condition(p)
	return c != nil && c.Status != corev1.ConditionTrue
}
