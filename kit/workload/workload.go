package workload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/inplace/inplaceclient"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/revision/revisionclient"
)

// Deps are what the skeleton is built from: the Kubernetes side of
// kit/wiring.Deps (wiring.Deps.Workload fills it).
type Deps struct {
	Kube          kubernetes.Interface
	KubeInformers informers.SharedInformerFactory
	// Namespace restricts the pod informer; empty means all namespaces.
	Namespace string
	// Gates are the feature gates (nil: Spec.Gates at their defaults).
	Gates        featuregate.FeatureGate
	Clock        clock.WithTicker
	Recorder     record.EventRecorder
	QueueOptions controller.QueueOptions
	QueueConfig  controller.QueueConfig
	// ExpectationTimeout: 0 means expectations.DefaultTimeout.
	ExpectationTimeout time.Duration
	// PodControl writes the pods (nil: podclient.New(Kube)).
	PodControl podcontrol.PodControl
}

// Spec is what differs between workloads in their skeleton.
type Spec struct {
	// Name is the reconciler's name: queue name, log key.
	Name string
	// Owner is the kind of the workload that controls the pods.
	Owner controller.OwnerKind
	// PodLabel is a label key every pod of the workload carries: pods are
	// listed server-side by its existence, so pods of other workloads never
	// reach the process's memory.
	PodLabel string
	// KeepPod names what the controller reads from a cached pod beyond what
	// controller.SlimPod keeps (nil: nothing more); see SlimPod.
	KeepPod Keep
	// Revisions: the workload keeps a ControllerRevision history
	// (RevisionInformer, Revisions and RevControl are set).
	Revisions bool
	// InPlace: the workload updates pods in place and runs lifecycle hooks
	// (InPlace and Lifecycle are set).
	InPlace bool
	// StatusInterval spaces counters-only status writes of one workload
	// (controller.StatusPacer); 0 writes every change at once.
	StatusInterval time.Duration
	// Gates are the feature gates the reconciler reads, registered at their
	// defaults when Deps.Gates is nil (asking a gate that is not registered
	// panics).
	Gates []featuregate.Feature
	// PreDownload is the feature gate that has nodes pull a rollout's
	// images ahead of it (kit/wiring.Deps.NewBase sets Jobs when it is on);
	// empty: never.
	PreDownload featuregate.Feature
}

// Base is the part of a workload reconciler every workload shares. A
// controller embeds it, registers its own informers and handlers through
// Watch, and builds its sync from the helpers of this package.
type Base struct {
	Spec
	Kube kubernetes.Interface
	// Gates are Deps.Gates, or Spec.Gates at their defaults.
	Gates    featuregate.FeatureGate
	Clock    clock.WithTicker
	Recorder record.EventRecorder
	Queue    *controller.Queue[types.NamespacedName]
	// PodInformer and Pods: the slimmed pod cache, indexed by owner UID
	// (controller.OwnerUIDIndex) and orphans by namespace
	// (controller.OrphanIndex). Read-only.
	PodInformer cache.SharedIndexInformer
	Pods        cache.Indexer
	// RevisionInformer, Revisions and RevControl: nil unless Spec.Revisions.
	RevisionInformer cache.SharedIndexInformer
	Revisions        *revision.Lister
	RevControl       revision.Control
	// RV records the controller's own writes until the cache shows them.
	RV *expectations.ResourceVersion
	// InPlace and Lifecycle write in-place updates and lifecycle hook steps
	// of pods (nil unless Spec.InPlace).
	InPlace   *inplaceclient.Control
	Lifecycle lifecycle.Writer
	// Jobs pre-download images through ImagePullJobs; nil unless the
	// controller set it (kit/wiring.Deps.ImagePullJobs).
	Jobs *predownload.Control
	// Pacer is nil when Spec.StatusInterval is 0.
	Pacer *controller.StatusPacer[types.NamespacedName]
	// PodControl writes pods (here: adoption and release); sync fixture
	// tests pass podcontrol's Fake.
	PodControl podcontrol.PodControl

	expOpts []expectations.Option
	loop    *controller.Loop[types.NamespacedName]
	synced  []cache.InformerSynced
}

// New builds the skeleton: queue and loop (running sync), the slimmed pod
// informer and, with spec.Revisions, the revision informer, both requested
// from d.KubeInformers and waited for by Run. It registers no handler.
func New(d Deps, spec Spec, sync func(context.Context, types.NamespacedName) error) (*Base, error) {
	b := &Base{
		Spec: spec, Kube: d.Kube, Gates: d.Gates, Clock: d.Clock, Recorder: d.Recorder,
		Queue:      controller.NewQueue[types.NamespacedName](spec.Name, d.QueueOptions, d.QueueConfig),
		expOpts:    []expectations.Option{expectations.WithClock(d.Clock)},
		PodControl: d.PodControl,
	}
	if d.ExpectationTimeout > 0 {
		b.expOpts = append(b.expOpts, expectations.WithTimeout(d.ExpectationTimeout))
	}
	if b.PodControl == nil {
		b.PodControl = podclient.New(d.Kube)
	}
	if b.Gates == nil {
		b.Gates = features.MustNewGate(spec.Gates...)
	}
	b.RV = expectations.NewResourceVersion(b.expOpts...)
	if spec.StatusInterval > 0 {
		b.Pacer = &controller.StatusPacer[types.NamespacedName]{Interval: spec.StatusInterval}
	}
	b.loop = controller.NewLoop(spec.Name, b.Queue, sync)
	if spec.InPlace {
		b.InPlace, b.Lifecycle = inplaceclient.New(d.Kube, d.Clock), lifecycle.NewWriter(d.Kube, d.Clock)
	}

	b.PodInformer = d.KubeInformers.InformerFor(&corev1.Pod{}, LabelledPods(d.Namespace, spec.PodLabel))
	// The informer may be another reconciler's of the same binary (a
	// superset): make sure of the index this one reads.
	if err := controller.AddOwnerUIDIndex(b.PodInformer); err != nil {
		return nil, err
	}
	// Pods dominate the memory of a workload controller: cache only what it
	// reads (every pod write is a patch of the difference, so what is left
	// out is never written away).
	if err := b.PodInformer.SetTransform(SlimPod(spec.KeepPod)); err != nil {
		return nil, fmt.Errorf("set pod informer transform: %w", err)
	}
	b.Pods = b.PodInformer.GetIndexer()
	b.synced = append(b.synced, b.PodInformer.HasSynced)
	if spec.Revisions {
		b.RevisionInformer = d.KubeInformers.Apps().V1().ControllerRevisions().Informer()
		if err := controller.AddOwnerUIDIndex(b.RevisionInformer); err != nil {
			return nil, err
		}
		b.Revisions = revision.NewLister(b.RevisionInformer.GetIndexer())
		b.RevControl = revisionclient.New(d.Kube)
		b.synced = append(b.synced, b.RevisionInformer.HasSynced)
	}
	return b, nil
}

// LabelledPods builds a pod informer of the pods carrying label key, in
// namespace (empty: all), indexed by owner UID and by orphan. The namespace
// is passed explicitly because a factory's InformerFor does not pass its own
// on.
func LabelledPods(namespace, label string) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, namespace, resync,
			cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID, controller.OrphanIndex: controller.IndexOrphanByNamespace},
			func(o *metav1.ListOptions) { o.LabelSelector = label })
	}
}

// Scale returns new create/delete expectations with the controller's clock
// and timeout.
func (b *Base) Scale() *expectations.Scale[types.NamespacedName] {
	return expectations.NewScale[types.NamespacedName](b.expOpts...)
}

// NodeCreates returns new per-node create expectations with the
// controller's clock and timeout.
func (b *Base) NodeCreates() *expectations.Node[types.NamespacedName] {
	return expectations.NewNode[types.NamespacedName](b.expOpts...)
}

// Watch has Run wait for inf and, when h is not nil, registers h on it;
// what names the objects in the error.
func (b *Base) Watch(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, what string) error {
	b.synced = append(b.synced, inf.HasSynced)
	if h == nil {
		return nil
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return fmt.Errorf("watch %s: %w", what, err)
	}
	return nil
}

// OwnerHandler is the event handler of the workload objects themselves:
// every event enqueues the workload (controller.KeyHandler); a deleted one
// first has its resource-version expectation dropped and forget (nil:
// nothing more) called, to drop what the controller keeps for it.
func (b *Base) OwnerHandler(forget func(obj any, key types.NamespacedName)) controller.KeyHandler {
	return controller.KeyHandler{Enqueue: b.Queue.Enqueue, Deleted: func(obj any, key types.NamespacedName) {
		if o, ok := controller.ObjectOf(obj); ok {
			b.RV.Delete(o.GetUID())
		}
		if forget != nil {
			forget(obj, key)
		}
	}}
}

// Synced are the informers Run waits for.
func (b *Base) Synced() []cache.InformerSynced { return b.synced }

// Name implements kitapp.Controller.
func (b *Base) Name() string { return b.Spec.Name }

// Run waits for the informers (started by the shell or a test) and
// processes workloads until ctx ends.
func (b *Base) Run(ctx context.Context, workers int) error {
	return b.loop.RunWhenSynced(ctx, workers, b.synced...)
}

// PodCache is the controller's pod cache (read-only: never modify what it
// returns). For tests and debugging.
func (b *Base) PodCache() cache.Indexer { return b.Pods }

// PreDownload has nodes pull the images of w's rollout ahead of it (kit/
// predownload.Control.Reconcile; in is called only when Jobs is set).
// Failures are logged, never fail the sync: they only cost the
// optimisation.
func (b *Base) PreDownload(ctx context.Context, w predownload.Workload, in func() predownload.Input) {
	if b.Jobs != nil {
		b.Jobs.Reconcile(ctx, w, in(), b.RV.Expect)
	}
}
