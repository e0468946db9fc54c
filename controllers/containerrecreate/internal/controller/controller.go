// Package controller is the ContainerRecreateRequest reconciler, the manager side of OpenKruise's
// ContainerRecreateRequest (kruise-manager's containerrecreaterequest controller plus what its admission webhook
// fills in): it accepts a request against its pod (labels with the pod's UID and node, each container's preStop
// and current ID), completes it when the pod is gone, the agent never answers or activeDeadlineSeconds passes,
// copies the pod's container statuses onto it while the node agent recreates, holds the pod NotReady through
// KruisePodReady for unreadyGracePeriodSeconds, and deletes it ttlSecondsAfterFinished after completion. The node
// agent (controllers/probe, probe-agent) does the recreating.
package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue.
const Name = "containerrecreaterequest"

// podNameIndex indexes requests by "<namespace>/<spec.podName>".
const podNameIndex = "podName"

// Controller reconciles ContainerRecreateRequests.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	crrs      appslisters.ContainerRecreateRequestLister
	crrIndex  cache.Indexer
	pods      corelisters.PodLister
	readiness *podreadiness.Writer
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the ContainerRecreateRequest and pod informers from d's factories, registers the handlers and
// returns the reconciler; nothing starts until the factories are started and Run is called.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{readiness: podreadiness.NewWriter(d.Kube, d.PassiveClock())}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	crrInf := d.Informers.Apps().V1alpha1().ContainerRecreateRequests()
	podInf, err := podInformer(d.KubeInformers, d.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := crrInf.Informer().AddIndexers(cache.Indexers{podNameIndex: indexByPodName}); err != nil {
		return nil, fmt.Errorf("%s: add index: %w", Name, err)
	}
	c.crrs, c.crrIndex = crrInf.Lister(), crrInf.Informer().GetIndexer()
	c.pods = corelisters.NewPodLister(podInf.GetIndexer())
	c.WaitFor(crrInf.Informer().HasSynced, podInf.HasSynced)
	if err := c.addHandlers(crrInf.Informer(), podInf); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}

func indexByPodName(obj any) ([]string, error) {
	crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest)
	if !ok {
		return nil, nil
	}
	return []string{crr.Namespace + "/" + crr.Spec.PodName}, nil
}
