// Package controller is the PodUnavailableBudget reconciler: it finds the
// pods each budget protects (selector, or targetRef through the
// workload's /scale subresource), marks them with the related-pub
// annotation the pod webhook's match conditions test, and writes the
// budget's status (what the guard in internal/webhook takes from) only
// when it changed. controllers/pub/README.md describes the behaviour.
package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "podunavailablebudget"

// Deps are the reconciler's collaborators: kit/wiring's, how it finds the
// workload a targetRef names, and whether it watches the workload kinds.
type Deps struct {
	wiring.Deps
	Finder workload.Finder
	// WatchWorkloads watches CloneSets, Advanced StatefulSets and apps/v1
	// Deployments and StatefulSets for replica changes (a scale-in must
	// raise unavailableAllowed before the workload deletes pods).
	WatchWorkloads bool
}

// Controller reconciles PodUnavailableBudgets.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	// podControl writes the pods (the related-pub annotation).
	podControl podcontrol.PodControl
	pubs       policylisters.PodUnavailableBudgetLister
	pubIdx     cache.Indexer
	pods       cache.Indexer
	finder     workload.Finder
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers from d's factories, registers the handlers
// and returns the reconciler.
func New(d Deps) (*Controller, error) {
	if d.Finder == nil {
		return nil, fmt.Errorf("pub controller: a workload Finder is required")
	}
	c := &Controller{podControl: podclient.Or(d.PodControl, d.Kube), finder: d.Finder}
	var err error
	if c.Core, err = wiring.NewCore(d.Deps, Name, c.sync); err != nil {
		return nil, err
	}
	pubInf := d.Informers.Policy().V1alpha1().PodUnavailableBudgets()
	podInf := d.KubeInformers.Core().V1().Pods().Informer()
	if err := controller.AddOwnerUIDIndex(podInf); err != nil {
		return nil, fmt.Errorf("pod owner index: %w", err)
	}
	c.pubs, c.pubIdx, c.pods = pubInf.Lister(), pubInf.Informer().GetIndexer(), podInf.GetIndexer()
	if _, err := pubInf.Informer().AddEventHandler(pubHandler{c}); err != nil {
		return nil, fmt.Errorf("pub handler: %w", err)
	}
	if _, err := podInf.AddEventHandler(podHandler{c}); err != nil {
		return nil, fmt.Errorf("pod handler: %w", err)
	}
	c.WaitFor(pubInf.Informer().HasSynced, podInf.HasSynced)
	if d.WatchWorkloads {
		for _, inf := range []cache.SharedIndexInformer{
			d.KubeInformers.Apps().V1().Deployments().Informer(),
			d.KubeInformers.Apps().V1().StatefulSets().Informer(),
			d.Informers.Apps().V1alpha1().CloneSets().Informer(),
			d.Informers.Apps().V1beta1().StatefulSets().Informer(),
		} {
			if _, err := inf.AddEventHandler(workloadHandler{c}); err != nil {
				return nil, fmt.Errorf("workload handler: %w", err)
			}
			c.WaitFor(inf.HasSynced)
		}
	}
	return c, nil
}

// now is the controller's clock.
func (c *Controller) now() time.Time { return c.Clock.Now() }
