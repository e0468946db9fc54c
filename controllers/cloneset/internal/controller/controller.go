// Package controller is the CloneSet reconciler: it keeps spec.replicas pods
// of a CloneSet's template running, rolls them to a new template by
// recreation or in place within partition, maxUnavailable and maxSurge,
// drives the lifecycle hooks, keeps the ControllerRevision history and reports
// status. controllers/cloneset/README.md describes the behaviour in full.
//
// One sync reads only from informer caches, decides with pure functions
// (plan_diff.go, plan_scale.go, plan_update.go, plan_refresh.go,
// plan_podstodelete.go, status.go) and writes through narrow interfaces
// (act_*.go), recording expectations so that the next sync does not act on a
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
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "cloneset"

// Controller reconciles CloneSets. Beside the skeleton every pod workload
// shares (kit/workload.Base) it keeps the PVC cache, node labels for
// spread-aware scale-in, a second loop giving new pods their first write,
// the pod/PVC scale expectations and the podsToDelete names it deleted.
type Controller struct {
	*workload.Base
	client versioned.Interface
	sets   appslisters.CloneSetLister
	pvcs   cache.Indexer
	nodes  corelisters.NodeLister // labels only (keepNodeLabels): topology ranks on scale-in
	// podQueue and podLoop: new pods' first write (newpods.go).
	podQueue *controller.Queue[types.NamespacedName]
	podLoop  *controller.Loop[types.NamespacedName]
	scaleExp *expectations.Scale[types.NamespacedName]
	// replayInitialList: dependents replayed from an informer's initial list
	// enqueue their CloneSet (--disable-initial-list-delay; see handlers.go).
	replayInitialList bool
	// deletedNames: see act_podstodelete.go.
	deletedNames deletedNames
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods and PVCs are listed server-side by the label every CloneSet pod and
// PVC carries (apps.kruise.io/cloneset-instance-id), so pods of other
// workloads never reach this process's memory, and are indexed by owner UID.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{client: d.Client, replayInitialList: d.QueueOptions.DisableInitialDelay}
	base, err := d.NewBase(workload.Spec{
		Name: Name, Owner: Kind, PodLabel: pub.CloneSetInstanceID, Revisions: true, InPlace: true, StatusInterval: statusInterval,
		PreDownload: features.PreDownloadImageForInPlaceUpdate,
	}, c.sync)
	if err != nil {
		return nil, err
	}
	c.Base, c.scaleExp = base, base.Scale()
	setInf := d.Informers.Apps().V1alpha1().CloneSets()
	pvcInf := d.KubeInformers.InformerFor(&corev1.PersistentVolumeClaim{}, labelledClaims(d.Namespace))
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	if err := nodeInf.Informer().SetTransform(keepNodeLabels); err != nil {
		return nil, fmt.Errorf("set node informer transform: %w", err)
	}
	if err := controller.AddOwnerUIDIndex(pvcInf); err != nil {
		return nil, err
	}
	// Never cache PVCs' managedFields, whatever transform the factory was
	// built with.
	if err := pvcInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("set PVC informer transform: %w", err)
	}
	c.sets, c.pvcs, c.nodes = setInf.Lister(), pvcInf.GetIndexer(), nodeInf.Lister()
	c.podQueue = controller.NewQueue[types.NamespacedName](podQueueName, d.QueueOptions, d.QueueConfig)
	c.podLoop = controller.NewLoop(podQueueName, c.podQueue, c.syncNewPod)
	if err := c.addHandlers(setInf.Informer(), pvcInf, nodeInf.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// labelledClaims builds an informer of the PVCs carrying the CloneSet
// instance-id label, indexed by owner UID. The namespace is passed
// explicitly because a factory's InformerFor does not pass its own on.
func labelledClaims(namespace string) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPersistentVolumeClaimInformer(client, namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID},
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
	go func() { errs <- c.podLoop.RunWhenSynced(ctx, workers*podWorkersPerWorker, c.Synced()...) }()
	err := c.Base.Run(ctx, workers)
	return errors.Join(err, <-errs)
}
