// Package controller is the Advanced DaemonSet reconciler
// (apps.kruise.io/v1alpha1 DaemonSet): one pod per eligible node, placed by
// kube-scheduler through a required node affinity on the node's name, rolled
// to a new template by recreation (maxUnavailable or maxSurge) or in place,
// within a partition and a node selector, with a preDelete lifecycle hook,
// ControllerRevision history and upstream's status counters.
// controllers/daemonset/README.md describes the behaviour.
//
// One sync reads only from informer caches, decides with pure functions
// (manage.go, update.go, budgets.go, status.go) and writes through narrow
// interfaces, recording expectations so that the next sync does not act on a
// cache that has not caught up with its own writes.
package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
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
const Name = "daemonset"

// Failed pods are deleted with a per-node back-off (upstream's values), so a
// kubelet that keeps rejecting the pod does not meet a hot loop.
const (
	failedPodsBackoffBase = time.Second
	failedPodsBackoffMax  = 15 * time.Minute
)

// Deps are the reconciler's collaborators (kit/wiring builds them).
type Deps = wiring.Deps

// Controller reconciles Advanced DaemonSets.
type Controller struct {
	kube       kubernetes.Interface
	client     versioned.Interface
	sets       appslisters.DaemonSetLister
	nodes      corelisters.NodeLister
	pods       cache.Indexer
	revisions  *revision.Lister
	revIndexer cache.Indexer
	revControl revision.Control
	inplace    *inplace.Control
	lifecycle  lifecycle.Writer
	gates      featuregate.FeatureGate
	clock      clock.WithTicker
	recorder   record.EventRecorder
	queue      *controller.Queue[types.NamespacedName]
	loop       *controller.Loop[types.NamespacedName]
	// deletes: pod deletions not yet seen; creates: per node, pods created
	// and not yet seen (one lost event delays one node, not the set).
	deletes *expectations.Scale[types.NamespacedName]
	creates *expectations.Node[types.NamespacedName]
	// batches: where each DaemonSet's next creation slow start begins.
	batches   controller.BatchMemory[types.NamespacedName]
	rvExp     *expectations.ResourceVersion
	placement *placementCache
	backoff   *flowcontrol.Backoff
	rejected  *rejections
	// pacer spaces counters-only status writes (status.go).
	pacer  *controller.StatusPacer[types.NamespacedName]
	synced []cache.InformerSynced
	jobs   *predownload.Control // nil unless PreDownloadImageForDaemonSetUpdate
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods are listed server-side by the label every DaemonSet pod carries
// (controller-revision-hash), so most pods of other workloads never reach
// this process's memory, and are indexed by owner UID. Nodes are cached
// without their image lists.
func New(d Deps) (*Controller, error) {
	if d.Gates == nil {
		// The gates this reconciler reads, at their defaults (a gate not
		// registered would panic when asked).
		d.Gates = features.MustNewGate(features.PreDownloadImageForDaemonSetUpdate, features.DaemonSetPruneIneligibleNodes)
	}
	expOpts := []expectations.Option{expectations.WithClock(d.Clock)}
	if d.ExpectationTimeout > 0 {
		expOpts = append(expOpts, expectations.WithTimeout(d.ExpectationTimeout))
	}
	setInf := d.Informers.Apps().V1alpha1().DaemonSets()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, d.Namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID, controller.OrphanIndex: controller.IndexOrphanByNamespace},
			func(o *metav1.ListOptions) { o.LabelSelector = pub.ControllerRevisionHashLabelKey })
	})
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	revInf := d.KubeInformers.Apps().V1().ControllerRevisions().Informer()
	for _, inf := range []cache.SharedIndexInformer{podInf, revInf} {
		if err := controller.AddOwnerUIDIndex(inf); err != nil {
			return nil, err
		}
	}
	// Orphan revisions are adopted like orphan pods (adopt.go).
	if _, exists := revInf.GetIndexer().GetIndexers()[controller.OrphanIndex]; !exists {
		if err := revInf.AddIndexers(cache.Indexers{controller.OrphanIndex: controller.IndexOrphanByNamespace}); err != nil {
			return nil, fmt.Errorf("index orphan revisions: %w", err)
		}
	}
	if err := podInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("set pod informer transform: %w", err)
	}
	if err := nodeInf.Informer().SetTransform(stripNode); err != nil {
		return nil, fmt.Errorf("set node informer transform: %w", err)
	}
	c := &Controller{
		kube:       d.Kube,
		client:     d.Client,
		sets:       setInf.Lister(),
		nodes:      nodeInf.Lister(),
		pods:       podInf.GetIndexer(),
		revisions:  revision.NewLister(revInf.GetIndexer()),
		revIndexer: revInf.GetIndexer(),
		revControl: revision.NewControl(d.Kube),
		inplace:    inplace.NewControl(d.Kube, d.Clock),
		lifecycle:  lifecycle.NewWriter(d.Kube, d.Clock),
		gates:      d.Gates,
		clock:      d.Clock,
		recorder:   d.Recorder,
		queue:      controller.NewQueue[types.NamespacedName](Name, d.QueueOptions, d.QueueConfig),
		deletes:    expectations.NewScale[types.NamespacedName](expOpts...),
		creates:    expectations.NewNode[types.NamespacedName](expOpts...),
		rvExp:      expectations.NewResourceVersion(expOpts...),
		pacer:      &controller.StatusPacer[types.NamespacedName]{Interval: statusInterval},
		placement:  newPlacementCache(),
		rejected:   &rejections{byUID: map[types.UID]rejection{}},
		backoff:    flowcontrol.NewFakeBackOff(failedPodsBackoffBase, failedPodsBackoffMax, d.Clock), // "Fake" only means "with this clock",
	}
	c.loop = controller.NewLoop(Name, c.queue, c.sync)
	infs := []cache.SharedIndexInformer{setInf.Informer(), podInf, nodeInf.Informer(), revInf}
	if d.Gates.Enabled(features.PreDownloadImageForDaemonSetUpdate) {
		jobInf := d.Informers.Apps().V1alpha1().ImagePullJobs().Informer()
		jobs, err := predownload.NewControl(d.Kube, func(ns string) predownload.JobClient { return d.Client.AppsV1alpha1().ImagePullJobs(ns) }, jobInf, d.Recorder)
		if err != nil {
			return nil, err
		}
		c.jobs = jobs
		infs = append(infs, jobInf)
	}
	for _, inf := range infs {
		c.synced = append(c.synced, inf.HasSynced)
	}
	if err := c.addHandlers(setInf.Informer(), podInf, nodeInf.Informer(), revInf); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return Name }

// Run waits for the informers (started by the shell or a test) and processes
// DaemonSets until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.loop.RunWhenSynced(ctx, workers, c.synced...)
}

// EligibilityEvaluations is how many (DaemonSet generation, node) verdicts
// were computed since start: with the placement cache it grows with nodes
// and template changes, not with syncs (OpenKruise #1011).
func (c *Controller) EligibilityEvaluations() uint64 { return c.placement.evaluations.Load() }

// stripNode keeps what placement reads out of the cache's copy of a node:
// no managedFields and no image list (the largest part of a node's status).
func stripNode(obj any) (any, error) {
	obj, err := controller.StripManagedFields(obj)
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return obj, err
}
