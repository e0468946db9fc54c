package inplace

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
)

// UpdateCompleted reports whether the in-place update recorded in state has
// finished on the pod's containers:
//   - no grace period is pending (no apps.kruise.io/inplace-update-grace),
//   - no later batch is pending (Pending), and
//   - every container recorded in lastContainerStatuses has a status whose
//     imageID differs from the recorded one, or whose image is the image in
//     the pod spec (covers an empty recorded imageID, and a new tag of the
//     same image). A recorded container without a status is not done.
//   - when the state says updateEnvFromMetadata: the node agent's
//     apps.kruise.io/runtime-containers-meta shows every container running,
//     under its current containerID, with the env the pod's labels and
//     annotations resolve to now (containermeta.Consistent), and every
//     container that reads such env is Ready — the restart was observed,
//     never assumed.
//
// A nil state (no update in flight) is completed.
func UpdateCompleted(pod *corev1.Pod, state *pub.InPlaceUpdateState) bool {
	if state == nil {
		return true
	}
	return !inGrace(pod) && !Pending(state) && containersUpdated(pod, state) &&
		(!state.UpdateEnvFromMetadata || envRestarted(pod))
}

// envRestarted is the env-from-metadata part of UpdateCompleted.
func envRestarted(pod *corev1.Pod) bool {
	set, err := containermeta.Decode(pod)
	if err != nil {
		return false
	}
	if ok, _ := containermeta.Consistent(pod, set); !ok {
		return false
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if len(containermeta.Refs(c)) > 0 {
			if cs := containerStatus(pod, c.Name); cs == nil || !cs.Ready {
				return false
			}
		}
	}
	return true
}

func inGrace(pod *corev1.Pod) bool {
	_, ok := pub.GetInPlaceUpdateGrace(pod)
	return ok
}

// containersUpdated is the per-container part of UpdateCompleted.
func containersUpdated(pod *corev1.Pod, state *pub.InPlaceUpdateState) bool {
	for name, last := range state.LastContainerStatuses {
		cs := containerStatus(pod, name)
		if cs == nil {
			return false
		}
		if cs.ImageID != last.ImageID {
			continue
		}
		if !sameImage(cs.Image, specImage(pod, name)) {
			return false
		}
	}
	return true
}

func specImage(pod *corev1.Pod, name string) string {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return pod.Spec.Containers[i].Image
		}
	}
	return ""
}

// sameImage compares a status image with a spec image, allowing for the
// normalisation the runtime applies ("nginx" is "docker.io/library/nginx:latest").
func sameImage(status, spec string) bool {
	if spec == "" || status == "" {
		return false
	}
	return status == spec || normalizeImage(status) == normalizeImage(spec)
}

// normalizeImage expands a docker reference to its canonical form: default
// registry docker.io, "library/" for official images, tag "latest" when
// there is neither tag nor digest.
func normalizeImage(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	domain, rest, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if !hasDigest && !strings.Contains(rest[strings.LastIndexByte(rest, '/')+1:], ":") {
		rest += ":latest"
	}
	out := domain + "/" + rest
	if hasDigest {
		out += "@" + digest
	}
	return out
}

// MarkReady reports whether InPlaceUpdateReady should be set True on pod
// (Refresh does): the pod has the gate, no grace period is pending, and
//   - state records an update that has completed (UpdateCompleted); or
//   - there is no state while the condition exists and is not True: the
//     gate was turned False for an update whose pod write never landed (a
//     crash or a lost Lease between the two writes, a write an admission
//     webhook rejected). Nothing will ever complete it, so without this the
//     pod would stay out of Service endpoints, and count against
//     maxUnavailable and PodUnavailableBudgets, for good. A rollout still
//     pending starts the update afresh, turning the gate False again.
//
// As in OpenKruise's refresh, whatever reason the False condition carries
// does not matter: the gate is ours. A missing condition is left to the
// workload's first write of a new pod's gates (it waits for scheduling).
func MarkReady(pod *corev1.Pod, state *pub.InPlaceUpdateState) bool {
	if !HasReadinessGate(pod) || inGrace(pod) {
		return false
	}
	if state == nil {
		c := Condition(pod)
		return c != nil && c.Status != corev1.ConditionTrue
	}
	return UpdateCompleted(pod, state)
}
