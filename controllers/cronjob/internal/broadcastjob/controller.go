// Package broadcastjob is the BroadcastJob reconciler: it runs one pod of spec.template on every eligible node
// (the nodes the pod fits, as OpenKruise checks them), within spec.parallelism, never replaces a failed pod,
// deletes pods whose node no longer fits them, applies the completion and failure policies, and reports counters
// and conditions.
// See the BroadcastJob section of controllers/cronjob/README.md for the behaviour in full.
package broadcastjob

import (
	"context"
	"fmt"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/deps"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "broadcastjob"

// ExpectationTTL bounds how long a created pod that never shows up in the cache blocks its node.
const ExpectationTTL = 2 * time.Minute

// Controller reconciles BroadcastJobs.
type Controller struct {
	client   versioned.Interface
	kube     kubernetes.Interface
	jobs     appslisters.BroadcastJobLister
	pods     corelisters.PodLister
	podIndex cache.Indexer
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	clock    clock.WithTicker
	recorder record.EventRecorder
	queue    *controller.Queue[types.NamespacedName]
	loop     *controller.Loop[types.NamespacedName]
	creates  *expectations.Node[types.NamespacedName]
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the BroadcastJob, pod and node informers from d's factories, registers the event handlers and
// returns the reconciler. Nothing is started.
//
// The pod informer is the factory's Pod informer created with a server-side label selector (only pods carrying
// the broadcastjob-controller-uid label are listed and cached) and an owner-UID index. If another reconciler
// registered the factory's Pod informer first, that one is used as is (a superset) and only the index is added.
func New(d deps.Deps) (*Controller, error) {
	jobInf := d.Informers.Apps().V1alpha1().BroadcastJobs()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, newJobPodInformer(d.Namespace))
	if _, ok := podInf.GetIndexer().GetIndexers()[controller.OwnerUIDIndex]; !ok {
		if err := controller.AddOwnerUIDIndex(podInf); err != nil {
			return nil, fmt.Errorf("add owner index to the pod informer: %w", err)
		}
	}
	nodeInf := d.KubeInformers.Core().V1().Nodes()

	c := &Controller{
		client:   d.Client,
		kube:     d.Kube,
		jobs:     jobInf.Lister(),
		pods:     corelisters.NewPodLister(podInf.GetIndexer()),
		podIndex: podInf.GetIndexer(),
		nodes:    nodeInf.Lister(),
		clock:    d.Clock,
		recorder: d.Recorder,
		queue:    controller.NewQueue[types.NamespacedName](Name, d.QueueOptions, d.QueueConfig),
		creates:  expectations.NewNode[types.NamespacedName](expectations.WithClock(d.Clock), expectations.WithTimeout(ExpectationTTL)),
	}
	c.loop = controller.NewLoop(Name, c.queue, c.sync)
	for _, inf := range []cache.SharedIndexInformer{jobInf.Informer(), podInf, nodeInf.Informer()} {
		c.synced = append(c.synced, inf.HasSynced)
	}
	if _, err := jobInf.Informer().AddEventHandler(controller.NewKeyHandler(c.queue)); err != nil {
		return nil, fmt.Errorf("watch BroadcastJobs: %w", err)
	}
	if _, err := podInf.AddEventHandler(c.podHandler()); err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(c.nodeHandler()); err != nil {
		return nil, fmt.Errorf("watch nodes: %w", err)
	}
	return c, nil
}

// newJobPodInformer lists and watches only pods labelled by a BroadcastJob, in namespace (empty: all). The
// namespace is passed explicitly because a factory's InformerFor does not pass its own on.
func newJobPodInformer(namespace string) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID},
			func(o *metav1.ListOptions) { o.LabelSelector = LabelJobUID })
	}
}

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return Name }

// Run waits for the informers (started by the shell or a test) and processes BroadcastJobs until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.loop.RunWhenSynced(ctx, workers, c.synced...)
}
