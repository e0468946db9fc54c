// Package controller is container launch priority's reconciler: for each pod whose containers wait on a
// KRUISE_CONTAINER_BARRIER env, it creates the barrier ConfigMap "<pod>-barrier" owned by the pod (the garbage
// collector deletes it with the pod) and adds the next "p_<priority>" key once every container of a higher
// priority is ready; the kubelet starts a container only once its key exists. A pod that asks for launch
// priorities but was created without the barrier (its webhook was down under failurePolicy Ignore) gets a
// Warning event and the condition ContainerLaunchBarrier=False, once.
package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue.
const Name = "launchpriority"

// Controller reconciles the barriers of pods with container launch priorities.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	pods     corelisters.PodLister
	barriers corelisters.ConfigMapLister
	pc       podcontrol.PodControl
	// written holds the resourceVersions of our own barrier and pod writes until the caches show them, so
	// that a sync never repeats a write on a stale copy.
	written *expectations.ResourceVersion
	// creates holds, per pod, the barrier this controller created and the
	// cache does not show yet: written cannot tell (it knows an object by
	// UID, and the cache has no copy to look it up by), and a sync then
	// would create it again.
	creates *expectations.Scale[types.NamespacedName]
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests its two informers from d's factories and registers its handlers:
//   - pods of d.Namespace (all when empty). A pod's launch priority is in its annotations and container env,
//     which no server-side selector can filter on, so the informer's transform keeps only the pods in scope
//     (barrier.InScope, slimmed by kit/controller.SlimPod) and reduces every other pod to a name-only stub;
//   - ConfigMaps labelled barrier.Label (the barriers this controller made), listed server-side.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{
		pc:      podclient.Or(d.PodControl, d.Kube),
		written: d.ResourceVersionExpectations(),
		creates: expectations.NewScale[types.NamespacedName](expectations.WithClock(d.PassiveClock())),
	}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(k kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(k, d.Namespace, resync, cache.Indexers{}, nil)
	})
	cmInf := d.KubeInformers.InformerFor(&corev1.ConfigMap{}, func(k kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(k, d.Namespace, resync, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = barrier.Label + "=true" })
	})
	if err := podInf.SetTransform(scopePod); err != nil {
		return nil, fmt.Errorf("launchpriority: set pod transform: %w", err)
	}
	if err := cmInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("launchpriority: set ConfigMap transform: %w", err)
	}
	c.pods, c.barriers = corelisters.NewPodLister(podInf.GetIndexer()), corelisters.NewConfigMapLister(cmInf.GetIndexer())
	c.WaitFor(podInf.HasSynced, cmInf.HasSynced)
	if err := c.addHandlers(podInf, cmInf); err != nil {
		return nil, fmt.Errorf("launchpriority: %w", err)
	}
	return c, nil
}

// scopePod is the pod informer's transform: a pod in scope is slimmed, any other becomes a stub holding only
// what a cache key and a delete event need.
func scopePod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	if barrier.InScope(p) {
		return controller.SlimPod(p)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}}, nil
}
