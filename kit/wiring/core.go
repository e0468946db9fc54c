package wiring

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Core is what a reconciler that is not a pod workload (those embed kit/workload.Base) is built around: its
// queue and workers, the clientsets it writes through, the clock it reads and the recorder of its events. A
// controller embeds it and keeps beside it only its listers and what makes it different, so that every
// controller names these parts the same way (c.Kube, c.Client, c.Clock, c.Recorder, c.Queue).
type Core[K comparable] struct {
	Kube     kubernetes.Interface
	Client   versioned.Interface
	Clock    clock.PassiveClock
	Recorder record.EventRecorder
	*controller.Reconciler[K]
}

// NewCore checks that d has what a reconciler cannot run without (Require, naming it name) and returns the Core
// of the reconciler name that runs sync for each key of its queue. Call it before requesting informers:
//
//	c := &Controller{}
//	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil { ... }
func NewCore[K comparable](d Deps, name string, sync func(context.Context, K) error) (Core[K], error) {
	if err := d.Require(name); err != nil {
		return Core[K]{}, err
	}
	return Core[K]{
		Kube:       d.Kube,
		Client:     d.Client,
		Clock:      d.PassiveClock(),
		Recorder:   d.Recorder,
		Reconciler: controller.NewReconciler(name, d.QueueOptions, d.QueueConfig, sync),
	}, nil
}
