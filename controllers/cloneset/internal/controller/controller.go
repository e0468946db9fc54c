// Package controller is the CloneSet reconciler: it keeps spec.replicas pods
// of a CloneSet's template running, rolls them to a new template by
// recreation or in place within partition, maxUnavailable and maxSurge,
// drives the lifecycle hooks, keeps the ControllerRevision history and reports
// status. controllers/cloneset/README.md describes the behaviour in full.
//
// One sync reads only from informer caches, decides with pure functions
// (diff.go, scale.go, update.go, status.go) and writes through narrow
// interfaces, recording expectations so that the next sync does not act on a
// cache that has not caught up with its own writes.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "cloneset"

// Deps are the reconciler's collaborators (kit/wiring builds them).
type Deps = wiring.Deps

// Controller reconciles CloneSets.
type Controller struct {
	kube       kubernetes.Interface
	client     versioned.Interface
	sets       appslisters.CloneSetLister
	pods       cache.Indexer
	pvcs       cache.Indexer
	nodes      corelisters.NodeLister // labels only (keepNodeLabels): topology ranks on scale-in
	jobs       *predownload.Control   // nil unless PreDownloadImageForInPlaceUpdate
	revisions  *revision.Lister
	revControl revision.Control
	inplace    *inplace.Control
	lifecycle  lifecycle.Writer
	gates      featuregate.FeatureGate
	clock      clock.WithTicker
	recorder   record.EventRecorder
	queue      *controller.Queue[types.NamespacedName]
	loop       *controller.Loop[types.NamespacedName]
	// podQueue and podLoop: new pods' first write (newpods.go).
	podQueue *controller.Queue[types.NamespacedName]
	podLoop  *controller.Loop[types.NamespacedName]
	scaleExp *expectations.Scale[types.NamespacedName]
	rvExp    *expectations.ResourceVersion
	// replayInitialList: dependents replayed from an informer's initial list
	// enqueue their CloneSet (--disable-initial-list-delay; see handlers.go).
	replayInitialList bool
	// deletedNames: see podstodelete.go.
	deletedNames deletedNames
	// pacer spaces out counters-only status writes (pacer.go).
	pacer  *controller.StatusPacer[types.NamespacedName]
	synced []cache.InformerSynced
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods and PVCs are listed server-side by the label every CloneSet pod and
// PVC carries (apps.kruise.io/cloneset-instance-id), so pods of other
// workloads never reach this process's memory, and are indexed by owner UID.
func New(d Deps) (*Controller, error) {
	if d.Gates == nil {
		d.Gates = features.MustNewGate()
	}
	expOpts := []expectations.Option{expectations.WithClock(d.Clock)}
	if d.ExpectationTimeout > 0 {
		expOpts = append(expOpts, expectations.WithTimeout(d.ExpectationTimeout))
	}
	setInf := d.Informers.Apps().V1alpha1().CloneSets()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, labelledInformer(d.Namespace, coreinformers.NewFilteredPodInformer))
	pvcInf := d.KubeInformers.InformerFor(&corev1.PersistentVolumeClaim{}, labelledInformer(d.Namespace, coreinformers.NewFilteredPersistentVolumeClaimInformer))
	revInf := d.KubeInformers.Apps().V1().ControllerRevisions().Informer()
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	if err := nodeInf.Informer().SetTransform(keepNodeLabels); err != nil {
		return nil, fmt.Errorf("set node informer transform: %w", err)
	}
	for _, inf := range []cache.SharedIndexInformer{podInf, pvcInf, revInf} {
		if err := controller.AddOwnerUIDIndex(inf); err != nil {
			return nil, err
		}
	}
	// Pods dominate the memory of this process: cache only what the
	// controller reads (every pod write is a patch of the difference, so
	// the fields left out are never written away), and never PVCs'
	// managedFields, whatever transform the factory was built with.
	if err := podInf.SetTransform(controller.SlimPod); err != nil {
		return nil, fmt.Errorf("set pod informer transform: %w", err)
	}
	if err := pvcInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("set PVC informer transform: %w", err)
	}

	c := &Controller{
		kube:       d.Kube,
		client:     d.Client,
		sets:       setInf.Lister(),
		pods:       podInf.GetIndexer(),
		pvcs:       pvcInf.GetIndexer(),
		nodes:      nodeInf.Lister(),
		revisions:  revision.NewLister(revInf.GetIndexer()),
		revControl: revision.NewControl(d.Kube),
		inplace:    inplace.NewControl(d.Kube, d.Clock),
		lifecycle:  lifecycle.NewWriter(d.Kube, d.Clock),
		gates:      d.Gates,
		clock:      d.Clock,
		recorder:   d.Recorder,
		queue:      controller.NewQueue[types.NamespacedName](Name, d.QueueOptions, d.QueueConfig),
		scaleExp:   expectations.NewScale[types.NamespacedName](expOpts...),
		rvExp:      expectations.NewResourceVersion(expOpts...),
		pacer:      &controller.StatusPacer[types.NamespacedName]{Interval: statusInterval},

		replayInitialList: d.QueueOptions.DisableInitialDelay,
	}
	c.loop = controller.NewLoop(Name, c.queue, c.sync)
	c.podQueue = controller.NewQueue[types.NamespacedName](podQueueName, d.QueueOptions, d.QueueConfig)
	c.podLoop = controller.NewLoop(podQueueName, c.podQueue, c.syncNewPod)
	informers := []cache.SharedIndexInformer{setInf.Informer(), podInf, pvcInf, revInf, nodeInf.Informer()}
	if d.Gates.Enabled(features.PreDownloadImageForInPlaceUpdate) {
		jobInf := d.Informers.Apps().V1alpha1().ImagePullJobs().Informer()
		jobs, err := predownload.NewControl(d.Kube, func(ns string) predownload.JobClient { return d.Client.AppsV1alpha1().ImagePullJobs(ns) }, jobInf, d.Recorder)
		if err != nil {
			return nil, err
		}
		c.jobs = jobs
		informers = append(informers, jobInf)
	}
	for _, inf := range informers {
		c.synced = append(c.synced, inf.HasSynced)
	}
	if err := c.addHandlers(setInf.Informer(), podInf, pvcInf); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(c.newPodHandler()); err != nil {
		return nil, fmt.Errorf("watch new pods: %w", err)
	}
	return c, nil
}

type filteredInformer func(kubernetes.Interface, string, time.Duration, cache.Indexers, internalinterfaces.TweakListOptionsFunc) cache.SharedIndexInformer

// labelledInformer builds an informer of objects carrying the CloneSet
// instance-id label. The namespace is passed explicitly because a factory's
// InformerFor does not pass its own on.
func labelledInformer(namespace string, newInformer filteredInformer) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newInformer(client, namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID, controller.OrphanIndex: controller.IndexOrphanByNamespace},
			func(o *metav1.ListOptions) { o.LabelSelector = pub.CloneSetInstanceID })
	}
}

// keepNodeLabels is the node informer's transform: scale-in ranks pods by
// their nodes' topology labels and reads nothing else, so the cache keeps a
// node's name and labels only (a node's status alone can weigh tens of KiB).
func keepNodeLabels(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels, DeletionTimestamp: n.DeletionTimestamp,
	}}, nil
}

// nodeLabels reads a node's labels from the cache, for podutil.RankBySpread.
func (c *Controller) nodeLabels(name string) (map[string]string, bool) {
	n, err := c.nodes.Get(name)
	if err != nil {
		return nil, false
	}
	return n.Labels, true
}

// PodCache is the controller's pod cache (read-only: never modify what it
// returns). For tests and debugging.
func (c *Controller) PodCache() cache.Indexer { return c.pods }

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return Name }

// podWorkersPerWorker: each CloneSet worker comes with this many pod-loop
// workers; their writes are small and independent, and the sooner a new
// pod's gate conditions land after it is scheduled, the sooner it is Ready
// (at 4 per worker the writes trailed the scheduler by seconds in a
// 2,000-pod scale-up).
const podWorkersPerWorker = 16

// Run waits for the informers (started by the shell or a test) and processes
// CloneSets, and new pods, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	errs := make(chan error, 1)
	go func() { errs <- c.podLoop.RunWhenSynced(ctx, workers*podWorkersPerWorker, c.synced...) }()
	err := c.loop.RunWhenSynced(ctx, workers, c.synced...)
	return errors.Join(err, <-errs)
}
