package containermeta

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// inScope reports whether the worker looks after pod: not being deleted,
// carrying the InPlaceUpdateReady readiness gate (a workload that updates it
// in place owns it — OpenKruise: pods of its workloads) and reading some
// label or annotation into a container's env (no other pod can need a
// restart for its metadata, so no other pod gets the annotation), with
// restartPolicy Always ("" is the API server's default): under OnFailure or
// Never a stopped container would not come back, and the pod would end.
func inScope(pod *corev1.Pod) bool {
	always := pod.Spec.RestartPolicy == "" || pod.Spec.RestartPolicy == corev1.RestartPolicyAlways
	return pod.DeletionTimestamp == nil && always && inplace.HasReadinessGate(pod) && containermeta.ReadsMetadata(pod)
}

// observed is what the runtime says about one container the set has no
// entry for yet.
type observed struct {
	// EnvHash is containermeta.CurrentHash of the container's env as the
	// runtime started it; 0 when it could not be read (not running, runtime
	// error): the entry is written without it and read again later.
	EnvHash uint64
	// PlainHash is the kubelet's hash of the container spec (its
	// io.kubernetes.container.hash annotation), 0 when unknown.
	PlainHash uint64
}

// newEntries lists the containers of pod whose current container (the
// containerID in the pod status) has no entry in old yet, or an entry
// without an env hash: those the runtime must be asked about. A container
// without a containerID (not created yet) is skipped.
func newEntries(pod *corev1.Pod, old *pub.RuntimeContainerMetaSet) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.ContainerID == "" {
			continue
		}
		if m := byID(old, cs.ContainerID); m == nil || m.Hashes.ExtractedEnvFromMetadataHash == 0 {
			out = append(out, cs)
		}
	}
	return out
}

// buildSet is the runtime-containers-meta of pod: one entry per container
// status with a containerID, in status order (as OpenKruise's agent writes
// it). An entry old has for the same containerID is kept as it is — what a
// container was started with never changes, so it is read once per
// container, and an agent restarted mid-way finds it in the annotation;
// otherwise the entry is built from obs (by container name).
func buildSet(pod *corev1.Pod, old *pub.RuntimeContainerMetaSet, obs map[string]observed) *pub.RuntimeContainerMetaSet {
	set := &pub.RuntimeContainerMetaSet{Containers: make([]pub.RuntimeContainerMeta, 0, len(pod.Status.ContainerStatuses))}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.ContainerID == "" {
			continue
		}
		m := byID(old, cs.ContainerID)
		if m == nil || m.Hashes.ExtractedEnvFromMetadataHash == 0 {
			o := obs[cs.Name]
			m = &pub.RuntimeContainerMeta{Name: cs.Name, ContainerID: cs.ContainerID, RestartCount: cs.RestartCount,
				Hashes: pub.RuntimeContainerHashes{PlainHash: o.PlainHash, ExtractedEnvFromMetadataHash: o.EnvHash}}
		}
		set.Containers = append(set.Containers, *m)
	}
	return set
}

// restart is a container to stop so that the kubelet starts it again with
// the env its pod's metadata resolves to now.
type restart struct {
	Name string
	// ID is the runtime's container ID (without the "<runtime>://" prefix).
	ID string
	// Hash is the env hash the container is to run with after the restart.
	Hash uint64
}

// restarts decides which containers of pod to stop, from set (the
// runtime-containers-meta as written): while an in-place update is in
// flight (InPlaceUpdateReady False, as in OpenKruise, so a label changed by
// hand restarts nothing), every running container whose recorded env hash —
// what its current container was started with — differs from the hash its
// env resolves to now. A container whose hash is not known yet (0) or whose
// entry names another containerID (the pod status has moved on) waits.
func restarts(pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) []restart {
	if c := inplace.Condition(pod); c == nil || c.Status != corev1.ConditionFalse {
		return nil
	}
	var out []restart
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := podutil.ContainerStatus(pod, c.Name)
		m := containermeta.Find(set, c.Name)
		if cs == nil || cs.State.Running == nil || m == nil || m.ContainerID != cs.ContainerID || m.Hashes.ExtractedEnvFromMetadataHash == 0 {
			continue
		}
		if want := containermeta.ExpectedHash(c, pod.Labels, pod.Annotations); m.Hashes.ExtractedEnvFromMetadataHash != want {
			out = append(out, restart{Name: c.Name, ID: runtimeID(cs.ContainerID), Hash: want})
		}
	}
	return out
}

// runtimeID strips the "<runtime>://" prefix of a pod status containerID.
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

func byID(set *pub.RuntimeContainerMetaSet, id string) *pub.RuntimeContainerMeta {
	if set == nil {
		return nil
	}
	for i := range set.Containers {
		if set.Containers[i].ContainerID == id {
			return &set.Containers[i]
		}
	}
	return nil
}
