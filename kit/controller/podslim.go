package controller

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// SlimPod is a cache.TransformFunc for the pod informer of a workload
// controller whose every pod write is a patch of the difference
// (PatchPod, lifecycle and adoption patches): it keeps only what the
// workload controllers and the kit packages they call read from a pod, so a
// cached pod costs a fraction of the decoded one.
//
// Kept: metadata without managedFields; spec.nodeName, spec.readinessGates
// and, per container, its name, image and the launch-priority env vars
// (kit/inplace.ContainerPriorities); status.phase, conditions, podIP and,
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
	if !ok {
		return obj, nil // tombstones and anything else pass through
	}
	slim := &corev1.Pod{ObjectMeta: p.ObjectMeta}
	m := &slim.ObjectMeta
	m.ManagedFields = nil
	m.Namespace = intern(m.Namespace)
	m.GenerateName = intern(m.GenerateName)
	m.Labels = internMap(m.Labels, true)
	m.Annotations = internMap(m.Annotations, false)
	if len(m.OwnerReferences) > 0 {
		refs := make([]metav1.OwnerReference, len(m.OwnerReferences))
		for i, r := range m.OwnerReferences {
			r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
			refs[i] = r
		}
		m.OwnerReferences = refs
	}

	slim.Spec.NodeName = intern(p.Spec.NodeName)
	slim.Spec.ReadinessGates = p.Spec.ReadinessGates
	if len(p.Spec.Containers) > 0 {
		slim.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
		for i, c := range p.Spec.Containers {
			slim.Spec.Containers[i] = corev1.Container{Name: intern(c.Name), Image: intern(c.Image), Env: priorityEnv(c.Env)}
		}
	}

	slim.Status.Phase = p.Status.Phase
	slim.Status.PodIP = p.Status.PodIP
	if len(p.Status.Conditions) > 0 {
		slim.Status.Conditions = make([]corev1.PodCondition, len(p.Status.Conditions))
		for i, c := range p.Status.Conditions {
			c.Type, c.Reason = corev1.PodConditionType(intern(string(c.Type))), intern(c.Reason)
			slim.Status.Conditions[i] = c
		}
	}
	if len(p.Status.ContainerStatuses) > 0 {
		slim.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
		for i, s := range p.Status.ContainerStatuses {
			slim.Status.ContainerStatuses[i] = corev1.ContainerStatus{
				Name: intern(s.Name), Image: intern(s.Image), ImageID: intern(s.ImageID),
				ContainerID: s.ContainerID, Ready: s.Ready, RestartCount: s.RestartCount,
			}
		}
	}
	return slim, nil
}

var _ cache.TransformFunc = SlimPod

// priorityEnv keeps the env vars that set a container's launch priority.
func priorityEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.Name == pub.ContainerLaunchBarrierEnvName || e.Name == pub.ContainerLaunchPriorityEnvName {
			out = append(out, e)
		}
	}
	return out
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
