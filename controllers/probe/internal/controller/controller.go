// Package controller is the probe-controller reconciler: it places the
// probes of every PodProbeMarker (apps.kruise.io/v1alpha1) on the
// NodePodProbe of each selected pod's node, named "<marker>#<probe>" as in
// OpenKruise, and copies the results a node agent writes into the
// NodePodProbe's status back onto the pods: markerPolicy labels and
// annotations and the podConditionType condition.
// controllers/probe/README.md describes the behaviour.
//
// Two loops share the caches: one keyed by node (the NodePodProbe and the
// pods on it, sync.go) and one keyed by PodProbeMarker (finalizer, marker
// removal on deletion, status). Decisions are pure functions (plan.go);
// the pod writes are in act.go.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name: queue name, log key.
const Name = "podprobemarker"

// Finalizer keeps a deleted PodProbeMarker readable until its markers are
// removed from the pods (OpenKruise's name).
const Finalizer = "kruise.io/node-pod-probe-cleanup"

// nodeIndex indexes pods by spec.nodeName.
const nodeIndex = "spec.nodeName"

// Controller reconciles PodProbeMarkers and NodePodProbes.
type Controller struct {
	client    versioned.Interface
	markers   appslisters.PodProbeMarkerLister
	probes    appslisters.NodePodProbeLister
	nodes     corelisters.NodeLister
	pods      corelisters.PodLister
	podIndex  cache.Indexer
	namespace string
	nodeQueue *controller.Queue[string]
	nodeLoop  *controller.Loop[string]
	ppmQueue  *controller.Queue[types.NamespacedName]
	ppmLoop   *controller.Loop[types.NamespacedName]
	synced    []cache.InformerSynced
	// retired holds, per marker, probes removed from its spec whose markers
	// are still to be taken off the pods (the next marker sync does it).
	// In memory only: a restart in between leaves those markers.
	// podRV: pods this reconciler wrote, until the cache shows the write
	// (a sync on the older copy would write again, only to conflict).
	podRV *expectations.ResourceVersion
	// podControl writes the pods (act.go).
	podControl podcontrol.PodControl
	retiredMu  sync.Mutex
	retired    map[types.NamespacedName][]appsv1alpha1.PodContainerProbe
	// recorder gets the Warning events of markers left out of a node's
	// NodePodProbe (nil: none).
	recorder record.EventRecorder
	// specBudget bounds a NodePodProbe spec's JSON size (fitSpec).
	specBudget int
	// scope, when set, replaces namespace as the set of namespaces this
	// reconciler writes for (Options.Namespaces).
	scope map[string]bool
}

// Options are the reconciler's settings beyond Deps.
type Options struct {
	// SpecBudget bounds the JSON size of a NodePodProbe spec (0:
	// DefaultSpecBudget).
	SpecBudget int
	// Namespaces restricts the reconciler to these namespaces when it runs
	// with Deps.Namespace empty and informers the caller scoped to them
	// (tests sharing a cluster that need more than one namespace).
	Namespaces []string
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
func New(d wiring.Deps) (*Controller, error) { return NewWithOptions(d, Options{}) }

// NewWithOptions is New with o.
func NewWithOptions(d wiring.Deps, o Options) (*Controller, error) {
	ppmInf := d.Informers.Apps().V1alpha1().PodProbeMarkers()
	nppInf := d.Informers.Apps().V1alpha1().NodePodProbes()
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, d.Namespace, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	})
	if err := podInf.AddIndexers(cache.Indexers{nodeIndex: indexByNode}); err != nil {
		return nil, fmt.Errorf("index pods by node: %w", err)
	}
	c := &Controller{
		podControl: podclient.Or(d.PodControl, d.Kube),
		client:     d.Client,
		markers:    ppmInf.Lister(),
		probes:     nppInf.Lister(),
		nodes:      nodeInf.Lister(),
		pods:       corelisters.NewPodLister(podInf.GetIndexer()),
		podIndex:   podInf.GetIndexer(),
		namespace:  d.Namespace,
		nodeQueue:  controller.NewQueue[string](Name+"-node", d.QueueOptions, d.QueueConfig),
		ppmQueue:   controller.NewQueue[types.NamespacedName](Name, d.QueueOptions, d.QueueConfig),
		retired:    map[types.NamespacedName][]appsv1alpha1.PodContainerProbe{},
		recorder:   d.Recorder,
		specBudget: o.SpecBudget,
	}
	if c.specBudget <= 0 {
		c.specBudget = DefaultSpecBudget
	}
	if len(o.Namespaces) > 0 {
		c.scope = map[string]bool{}
		for _, ns := range o.Namespaces {
			c.scope[ns] = true
		}
	}
	if d.Clock != nil {
		c.podRV = expectations.NewResourceVersion(expectations.WithClock(d.Clock))
	} else {
		c.podRV = expectations.NewResourceVersion()
	}
	c.nodeLoop = controller.NewLoop(Name+"-node", c.nodeQueue, c.syncNode)
	c.ppmLoop = controller.NewLoop(Name, c.ppmQueue, c.syncMarker)
	for _, inf := range []cache.SharedIndexInformer{ppmInf.Informer(), nppInf.Informer(), nodeInf.Informer(), podInf} {
		c.synced = append(c.synced, inf.HasSynced)
	}
	if err := c.addHandlers(ppmInf.Informer(), nppInf.Informer(), nodeInf.Informer(), podInf); err != nil {
		return nil, err
	}
	return c, nil
}

func indexByNode(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return Name }

// Run waits for the informers and runs both loops until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = c.nodeLoop.RunWhenSynced(ctx, workers, c.synced...) })
	wg.Go(func() { errs[1] = c.ppmLoop.RunWhenSynced(ctx, workers, c.synced...) })
	wg.Wait()
	if errs[0] != nil {
		return errs[0]
	}
	return errs[1]
}

// podsOnNode returns the cached pods bound to node.
func (c *Controller) podsOnNode(node string) ([]*corev1.Pod, error) {
	objs, err := c.podIndex.ByIndex(nodeIndex, node)
	if err != nil {
		return nil, fmt.Errorf("list pods of node %s: %w", node, err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && c.inScope(p.Namespace) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// inScope says whether namespace ns is this reconciler's (all when it is
// not restricted to one namespace).
func (c *Controller) inScope(ns string) bool {
	if c.scope != nil {
		return c.scope[ns]
	}
	return c.namespace == "" || c.namespace == ns
}

// retire records probes removed from marker key's spec.
func (c *Controller) retire(key types.NamespacedName, probes []appsv1alpha1.PodContainerProbe) {
	if len(probes) == 0 {
		return
	}
	c.retiredMu.Lock()
	defer c.retiredMu.Unlock()
	c.retired[key] = append(c.retired[key], probes...)
}

// takeRetired returns and forgets the retired probes of key.
func (c *Controller) takeRetired(key types.NamespacedName) []appsv1alpha1.PodContainerProbe {
	c.retiredMu.Lock()
	defer c.retiredMu.Unlock()
	out := c.retired[key]
	delete(c.retired, key)
	return out
}
