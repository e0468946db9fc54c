package barrier

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// InScope reports whether the controller has anything to do for pod: it carries a barrier, or asks for launch
// priorities the webhook did not inject (to report), and is not marked completed. Every other pod is reduced to
// a stub in the controller's cache.
func InScope(pod *corev1.Pod) bool {
	if pod.Annotations[CompletedKey] == "true" {
		return false
	}
	if pod.Annotations[pub.ContainerLaunchPriorityKey] != "" {
		return true
	}
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
		return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == pub.ContainerLaunchBarrierEnvName || e.Name == pub.ContainerLaunchPriorityEnvName
		})
	})
}

// Next is what the barrier of a pod needs now.
type Next struct {
	// Open is the key to add to the barrier ("" when none): the highest priority among the containers not yet
	// ready, once every container of a higher priority is ready.
	Open string
	// Complete: after Open (if any), the barrier holds every key a container still waits on; the pod is marked
	// CompletedKey and the controller forgets it.
	Complete bool
}

// NextKey decides the barrier's next key from the pod's containers (their barrier keys and readiness) and the
// keys the barrier already holds, as OpenKruise v1.9 does: only the not-ready containers count; the highest
// priority among them is opened; the pod is complete when the lowest one is already open, or when only one
// priority is left.
func NextKey(pod *corev1.Pod, have map[string]string) Next {
	ready := map[string]bool{}
	for _, s := range pod.Status.ContainerStatuses {
		ready[s.Name] = s.Ready
	}
	var waiting []int
	for i, p := range inplace.ContainerPriorities(pod) {
		if p.Set && !ready[pod.Spec.Containers[i].Name] {
			waiting = append(waiting, p.Value)
		}
	}
	if len(waiting) == 0 {
		return Next{Complete: true}
	}
	lowest, highest := slices.Min(waiting), slices.Max(waiting)
	if _, ok := have[Key(lowest)]; ok {
		return Next{Complete: true}
	}
	n := Next{Complete: lowest == highest}
	if _, ok := have[Key(highest)]; !ok {
		n.Open = Key(highest)
	}
	return n
}

// ContainersReady reports whether the pod's ContainersReady condition is True: the kubelet started them all,
// nothing is left to order.
func ContainersReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
