// Package controller is the SidecarSet reconciler: it records each
// SidecarSet's versions as ControllerRevisions in the controller's
// namespace, reports how many injected pods run the latest sidecars, and
// upgrades the sidecars of injected pods in place (cold: new image in the
// same container; hot: new image in the idle twin, then a flip) within
// partition, maxUnavailable, selector and priority/scatter. Injection at pod
// creation is the webhook's (internal/webhook); both share
// internal/sidecarcontrol. controllers/sidecarset/README.md describes the
// behaviour in full.
package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/revision/revisionclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "sidecarset"

// podsBySidecarSet indexes pods under every name in their
// kruise.io/sidecarset-injected-list annotation.
const podsBySidecarSet = "sidecarset"

// Deps are the reconciler's collaborators: kit/wiring's, and the
// controller's own namespace, where ControllerRevisions and the
// kruise-configuration ConfigMap live.
type Deps struct {
	wiring.Deps
	SystemNamespace string
}

// Controller reconciles SidecarSets.
type Controller struct {
	kube       kubernetes.Interface
	podControl podcontrol.PodControl // the pod writes: upgrades, flips, SidecarSetUpgradable
	client     versioned.Interface
	sets       appslisters.SidecarSetLister
	pods       cache.Indexer
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	revisions  sidecarcontrol.RevisionSource
	revControl revision.Control
	systemNS   string
	gates      featuregate.FeatureGate
	clock      clock.WithTicker
	recorder   record.EventRecorder
	queue      *controller.Queue[string]
	loop       *controller.Loop[string]
	rvExp      *expectations.ResourceVersion
	synced     []cache.InformerSynced
	// extra are informers outside the factories, run by Run.
	extra []cache.SharedIndexInformer
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories (plus a
// ControllerRevision and a ConfigMap informer limited to SystemNamespace),
// registers the event handlers and returns the reconciler.
func New(d Deps) (*Controller, error) {
	if d.Gates == nil {
		d.Gates = features.MustNewGate()
	}
	if d.SystemNamespace == "" {
		return nil, fmt.Errorf("sidecarset controller: SystemNamespace is required")
	}
	setInf := d.Informers.Apps().V1alpha1().SidecarSets()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewPodInformer(cs, d.Namespace, resync, cache.Indexers{})
	})
	if err := podInf.SetTransform(slimPod); err != nil {
		return nil, fmt.Errorf("set pod informer transform: %w", err)
	}
	if err := podInf.AddIndexers(cache.Indexers{podsBySidecarSet: indexPodBySidecarSet}); err != nil {
		return nil, fmt.Errorf("add pod index: %w", err)
	}
	nsInf := d.KubeInformers.Core().V1().Namespaces()
	revInf := newRevisionInformer(d.Kube, d.SystemNamespace)
	if err := revInf.AddIndexers(cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet}); err != nil {
		return nil, fmt.Errorf("add revision index: %w", err)
	}
	cmInf := newConfigMapInformer(d.Kube, d.SystemNamespace)

	c := &Controller{
		kube:       d.Kube,
		podControl: podclient.Or(d.PodControl, d.Kube),
		client:     d.Client,
		sets:       setInf.Lister(),
		pods:       podInf.GetIndexer(),
		namespaces: nsInf.Lister(),
		configMaps: corelisters.NewConfigMapLister(cmInf.GetIndexer()),
		revisions:  sidecarcontrol.RevisionIndexer{Indexer: revInf.GetIndexer()},
		revControl: revisionclient.New(d.Kube),
		systemNS:   d.SystemNamespace,
		gates:      d.Gates,
		clock:      d.Clock,
		recorder:   d.Recorder,
		rvExp:      expectations.NewResourceVersion(expectations.WithClock(d.Clock)),
		queue:      controller.NewQueue[string](Name, d.QueueOptions, d.QueueConfig),
	}
	c.loop = controller.NewLoop(Name, c.queue, c.sync)
	if err := c.addHandlers(setInf.Informer(), podInf, nsInf.Informer(), revInf); err != nil {
		return nil, err
	}
	// The two system-namespace informers are not in a factory: the
	// controller runs them itself.
	c.extra = []cache.SharedIndexInformer{revInf, cmInf}
	c.synced = []cache.InformerSynced{setInf.Informer().HasSynced, podInf.HasSynced, nsInf.Informer().HasSynced, revInf.HasSynced, cmInf.HasSynced}
	return c, nil
}

// Name implements kit/app.Controller.
func (c *Controller) Name() string { return Name }

// Run starts the system-namespace informers, waits for every cache and runs
// workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	for _, inf := range c.extra {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: caches did not sync", Name)
	}
	return c.loop.Run(ctx, workers)
}

// newRevisionInformer: the SidecarSets' ControllerRevisions, in the
// controller's namespace only and by the label they all carry.
func newRevisionInformer(kube kubernetes.Interface, ns string) cache.SharedIndexInformer {
	return appsinformers.NewFilteredControllerRevisionInformer(kube, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = sidecarcontrol.RevisionNameLabel })
}

// newConfigMapInformer: the one ConfigMap holding the patchPodMetadata
// whitelist.
func newConfigMapInformer(kube kubernetes.Interface, ns string) cache.SharedIndexInformer {
	return coreinformers.NewFilteredConfigMapInformer(kube, ns, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + sidecarcontrol.ConfigMapName })
}

// slimPod keeps only the metadata of pods no SidecarSet injected: they are
// cached to learn of a pod's existence and nothing else, and pods dominate
// this process's memory.
func slimPod(obj any) (any, error) {
	obj, err := controller.StripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if p, ok := obj.(*corev1.Pod); ok && p.Annotations[sidecarcontrol.InjectedListAnnotation] == "" {
		p.Spec = corev1.PodSpec{}
		p.Status = corev1.PodStatus{}
	}
	return obj, nil
}

func indexPodBySidecarSet(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return sidecarcontrol.InjectedSets(p).UnsortedList(), nil
}

// whitelist reads the patchPodMetadata whitelist from the cache.
func (c *Controller) whitelist() (*sidecarcontrol.Whitelist, error) {
	return sidecarcontrol.ReadWhitelist(c.configMaps, c.systemNS)
}
