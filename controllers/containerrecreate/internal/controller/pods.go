package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/workload"
)

// boundPods selects the pods on a node. A request for a pod on no node completes at once (stamp) after a lookup
// on the API server, and a pod never leaves a node once bound (spec.nodeName is immutable), so the cache needs
// no other pod: a stamped request's pod is in it until it is deleted.
const boundPods = "spec.nodeName!="

// podInformer is the reconciler's pod informer in factory: bound pods of namespace (all when empty), slimmed
// (slimPod). It replaces the factory's default pod informer, which nothing else in this binary uses.
func podInformer(factory informers.SharedInformerFactory, namespace string) (cache.SharedIndexInformer, error) {
	inf := factory.InformerFor(&corev1.Pod{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(kube, namespace, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.FieldSelector = boundPods })
	})
	// After InformerFor, which sets the factory's own transform.
	if err := inf.SetTransform(slimPod); err != nil {
		return nil, fmt.Errorf("slim the pod cache: %w", err)
	}
	return inf, nil
}

// slimPod keeps of a cached pod what a request reads (kit/controller.SlimPod: metadata, nodeName, readiness
// gates, container names, phase, conditions, container IDs, ready and restart counts), plus keepForRequests.
var slimPod = workload.SlimPod(keepForRequests)

// keepForRequests keeps what stamp and syncedStatuses read beyond SlimPod: the pod's termination grace period,
// each container's preStop (with its ports for an httpGet preStop) and each container status's running state
// (its start time tells a container started after the request).
func keepForRequests(full, slim *corev1.Pod) {
	slim.Spec.TerminationGracePeriodSeconds = full.Spec.TerminationGracePeriodSeconds
	for i := range slim.Spec.Containers {
		c := &full.Spec.Containers[i]
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			continue
		}
		slim.Spec.Containers[i].Lifecycle = &corev1.Lifecycle{PreStop: c.Lifecycle.PreStop}
		if c.Lifecycle.PreStop.HTTPGet != nil {
			slim.Spec.Containers[i].Ports = c.Ports
		}
	}
	for i := range slim.Status.ContainerStatuses {
		slim.Status.ContainerStatuses[i].State.Running = full.Status.ContainerStatuses[i].State.Running
	}
}
