// Package controller is the Advanced StatefulSet reconciler
// (apps.kruise.io/v1beta1 StatefulSet): pods with stable ordinal identities
// and claims, created and deleted in order (OrderedReady) or in parallel,
// rolled to a new template from the highest ordinal down to the partition
// by recreation or in place, with lifecycle hooks, revision history and
// status. controllers/statefulset/README.md describes the behaviour.
//
// One sync reads only from informer caches, decides with pure functions
// (scale.go, plan_update.go, status.go) and writes through narrow
// interfaces, recording expectations so that the next sync does not act on
// a cache that has not caught up with its own writes.
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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
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
const Name = "statefulset"

// Deps are the reconciler's collaborators (kit/wiring builds them).
type Deps = wiring.Deps

// Controller reconciles Advanced StatefulSets.
type Controller struct {
	kube       kubernetes.Interface
	client     versioned.Interface
	sets       appslisters.StatefulSetLister
	pods       cache.Indexer
	claims     cache.Indexer
	revisions  *revision.Lister
	revControl revision.Control
	inplace    *inplace.Control
	lifecycle  lifecycle.Writer
	gates      featuregate.FeatureGate
	clock      clock.WithTicker
	recorder   record.EventRecorder
	queue      *controller.Queue[types.NamespacedName]
	loop       *controller.Loop[types.NamespacedName]
	scaleExp   *expectations.Scale[types.NamespacedName]
	rvExp      *expectations.ResourceVersion
	synced     []cache.InformerSynced
	jobs       *predownload.Control // nil unless PreDownloadImageForInPlaceUpdate
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods are listed server-side by the label every StatefulSet pod carries
// (statefulset.kubernetes.io/pod-name), so pods of other workloads never
// reach this process's memory, and are indexed by owner UID. Claims are
// looked up by name: a set's claims carry no label of their own.
func New(d Deps) (*Controller, error) {
	if d.Gates == nil {
		d.Gates = features.MustNewGate()
	}
	expOpts := []expectations.Option{expectations.WithClock(d.Clock)}
	if d.ExpectationTimeout > 0 {
		expOpts = append(expOpts, expectations.WithTimeout(d.ExpectationTimeout))
	}
	setInf := d.Informers.Apps().V1beta1().StatefulSets()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		// The orphan index serves adoption (adopt.go).
		return coreinformers.NewFilteredPodInformer(client, d.Namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID, controller.OrphanIndex: controller.IndexOrphanByNamespace},
			func(o *metav1.ListOptions) { o.LabelSelector = pub.StatefulSetPodNameLabel })
	})
	claimInf := d.KubeInformers.Core().V1().PersistentVolumeClaims().Informer()
	revInf := d.KubeInformers.Apps().V1().ControllerRevisions().Informer()
	for _, inf := range []cache.SharedIndexInformer{podInf, revInf} {
		if err := controller.AddOwnerUIDIndex(inf); err != nil {
			return nil, err
		}
	}
	// Pods dominate the memory of this process: never cache their
	// managedFields, whatever transform the factory was built with.
	for _, inf := range []cache.SharedIndexInformer{podInf, claimInf} {
		if err := inf.SetTransform(controller.StripManagedFields); err != nil {
			return nil, fmt.Errorf("set informer transform: %w", err)
		}
	}

	c := &Controller{
		kube:       d.Kube,
		client:     d.Client,
		sets:       setInf.Lister(),
		pods:       podInf.GetIndexer(),
		claims:     claimInf.GetIndexer(),
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
	}
	c.loop = controller.NewLoop(Name, c.queue, c.sync)
	infs := []cache.SharedIndexInformer{setInf.Informer(), podInf, claimInf, revInf}
	if d.Gates.Enabled(features.PreDownloadImageForInPlaceUpdate) {
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
	if err := c.addHandlers(setInf.Informer(), podInf, claimInf); err != nil {
		return nil, err
	}
	return c, nil
}

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return Name }

// Run waits for the informers (started by the shell or a test) and processes
// sets until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.loop.RunWhenSynced(ctx, workers, c.synced...)
}
