package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Keep copies from a decoded pod (full) into its slimmed copy (slim) what a
// controller reads beyond what controller.SlimPod keeps. full's spec and
// status are the decoded ones; slim's are SlimPod's.
type Keep func(full, slim *corev1.Pod)

// SlimPod is the pod informer's transform of a workload: controller.SlimPod,
// then keep (nil: nothing more).
func SlimPod(keep Keep) cache.TransformFunc {
	if keep == nil {
		return controller.SlimPod
	}
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		// SlimPod replaces spec and status wholesale: the shallow copies
		// still reach the decoded fields.
		full := &corev1.Pod{Spec: p.Spec, Status: p.Status}
		out, err := controller.SlimPod(p)
		if err != nil {
			return out, err
		}
		keep(full, out.(*corev1.Pod))
		return out, nil
	}
}

// Keeps is every keep of ks, in order.
func Keeps(ks ...Keep) Keep {
	return func(full, slim *corev1.Pod) {
		for _, k := range ks {
			k(full, slim)
		}
	}
}

// KeepPinnedNode keeps the pod's required node affinity: a one-pod-per-node
// workload reads the node a pod is pinned to before it is scheduled
// (kit/nodeplacement.TargetNode).
func KeepPinnedNode(full, slim *corev1.Pod) {
	a := full.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	slim.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
	}}
}

// KeepRestarts keeps the restart policy and the init containers' names and
// restart counts: a job counts the retries the kubelet made in place.
func KeepRestarts(full, slim *corev1.Pod) {
	slim.Spec.RestartPolicy = full.Spec.RestartPolicy
	var statuses []corev1.ContainerStatus
	for _, s := range full.Status.InitContainerStatuses {
		statuses = append(statuses, corev1.ContainerStatus{Name: s.Name, RestartCount: s.RestartCount})
	}
	slim.Status.InitContainerStatuses = statuses
}

// KeepScheduling keeps what decides whether a pod fits a node, for a
// workload that judges each running pod by its own spec (BroadcastJob, as
// OpenKruise's): node selector, affinity, tolerations and the resource
// requests (containers', init containers' with their restart policy,
// overhead, pod-level).
func KeepScheduling(full, slim *corev1.Pod) {
	fs, ss := &full.Spec, &slim.Spec
	ss.NodeSelector, ss.Affinity, ss.Tolerations = fs.NodeSelector, fs.Affinity, fs.Tolerations
	ss.Overhead, ss.Resources = fs.Overhead, fs.Resources
	for i := range ss.Containers {
		if i < len(fs.Containers) {
			ss.Containers[i].Resources = fs.Containers[i].Resources
		}
	}
	var inits []corev1.Container
	for _, c := range fs.InitContainers {
		inits = append(inits, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	ss.InitContainers = inits
}
