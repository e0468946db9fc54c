package controller

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
)

// SlimPod is a cache.TransformFunc for the pod informer of a workload
// controller whose every pod write is a patch of the difference
// (PatchPod, lifecycle and adoption patches): it keeps only what the
// workload controllers and the kit packages they call read from a pod, so a
// cached pod costs a fraction of the decoded one.
//
// Kept: metadata without managedFields; spec.nodeName, spec.readinessGates
// and, per container, its name, image, the launch-priority env vars
// (kit/inplace.ContainerPriorities) and the env vars read from labels or
// annotations (kit/inplace.UpdateCompleted); status.phase, conditions, podIP and,
// per container status, name, image, imageID, containerID, ready and
// restartCount. Dropped: volumes, init and ephemeral containers, probes,
// resources, security contexts, tolerations, affinity and the rest of the
// spec and status. A controller that needs another field must add it here
// (TestSlimPodKeepsWhatIsRead lists them).
//
// Repeated strings (namespace, label keys and values, owners, node and image
// names, condition types) are interned: thousands of pods of one workload
// share them.
func SlimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || slimmed(p) {
		// Tombstones and anything else pass through; so does a pod already
		// slimmed (client-go transforms a watch-list stream twice).
		return obj, nil
	}
	// In place: the decoded pod is the informer's own, and slimming it
	// rather than a copy leaves one pod struct per event.
	m := &p.ObjectMeta
	m.ManagedFields = nil
	m.Namespace = intern(m.Namespace)
	m.GenerateName = intern(m.GenerateName)
	m.Labels = internMap(m.Labels, true)
	m.Annotations = internMap(m.Annotations, false)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
	}

	var containers []corev1.Container
	for _, c := range p.Spec.Containers {
		containers = append(containers, corev1.Container{Name: intern(c.Name), Image: intern(c.Image), Env: priorityEnv(c.Env)})
	}
	p.Spec = corev1.PodSpec{NodeName: intern(p.Spec.NodeName), ReadinessGates: p.Spec.ReadinessGates, Containers: containers}

	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		c.Type, c.Reason = corev1.PodConditionType(intern(string(c.Type))), intern(c.Reason)
	}
	var statuses []corev1.ContainerStatus
	for _, s := range p.Status.ContainerStatuses {
		statuses = append(statuses, corev1.ContainerStatus{
			Name: intern(s.Name), Image: intern(s.Image), ImageID: intern(s.ImageID),
			ContainerID: s.ContainerID, Ready: s.Ready, RestartCount: s.RestartCount,
		})
	}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, Conditions: p.Status.Conditions, ContainerStatuses: statuses}
	return p, nil
}

// slimmed reports whether p went through SlimPod: the API server defaults
// these spec fields on every pod it serves, and SlimPod clears them.
func slimmed(p *corev1.Pod) bool {
	return p.ManagedFields == nil && p.Spec.RestartPolicy == "" && p.Spec.DNSPolicy == "" && p.Spec.SchedulerName == ""
}

var _ cache.TransformFunc = SlimPod

// priorityEnv keeps the env vars that set a container's launch priority,
// and those that read a label or annotation (kit/inplace's completion of an
// update of env from metadata resolves them against the pod's metadata).
func priorityEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.Name == pub.ContainerLaunchBarrierEnvName || e.Name == pub.ContainerLaunchPriorityEnvName || readsMetadata(e) {
			out = append(out, e)
		}
	}
	return out
}

func readsMetadata(e corev1.EnvVar) bool {
	if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
		return false
	}
	_, _, ok := containermeta.ParseFieldPath(e.ValueFrom.FieldRef.FieldPath)
	return ok
}

// internShortValues bounds the values worth interning: long ones (JSON
// states, timestamps) are unique per pod.
const internShortValues = 64

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap rebuilds m with interned keys and, when values is true or a
// value is short, interned values.
func internMap(m map[string]string, values bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values || len(v) <= internShortValues {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}
