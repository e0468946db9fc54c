package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
)

// NodePodProbes writes NodePodProbe status: nodeclient's, or a Flotilla
// clientset's AppsV1alpha1().NodePodProbes() in tests.
type NodePodProbes interface {
	UpdateStatus(ctx context.Context, npp *appsv1alpha1.NodePodProbe, opts metav1.UpdateOptions) (*appsv1alpha1.NodePodProbe, error)
}

// Deps are what an Agent is built from.
type Deps struct {
	NodeName string
	// NodePodProbes writes the node's NodePodProbe status.
	NodePodProbes NodePodProbes
	// PodInformer and NodePodProbeInformer must be scoped to the node
	// (field selectors NodePodFieldSelector and NodeNameFieldSelector): the
	// agent reads only its node's pods and NodePodProbe, and caches nothing
	// else. The pod informer is the one the node's other workers share; the
	// agent adds no handler to it. Both are started by the caller.
	PodInformer          cache.SharedIndexInformer
	NodePodProbeInformer cache.SharedIndexInformer
	Clock                clock.WithTicker
	// Prober runs the probes; nil means NewProber(Exec).
	Prober Prober
	// Exec runs exec probes (the node's CRI runtime); nil reports them Unknown.
	Exec Execer
	// MaxConcurrentExecs caps the exec probes running at once on the node
	// (0: no cap); an attempt that finds no free slot within its timeout is
	// skipped.
	MaxConcurrentExecs int
	// Recorder receives the pod events of result changes (nil: none).
	Recorder record.EventRecorder
	// BatchDelay gathers the results changed within it into one status write.
	BatchDelay time.Duration
	// RetryDelay is the wait after a failed status write.
	RetryDelay time.Duration
}

// NodePodFieldSelector selects the pods bound to node.
func NodePodFieldSelector(node string) string {
	return fields.OneTermEqualSelector("spec.nodeName", node).String()
}

// NodeNameFieldSelector selects the object named after node.
func NodeNameFieldSelector(node string) string {
	return fields.OneTermEqualSelector("metadata.name", node).String()
}

// Agent runs the probes of one node's NodePodProbe.
type Agent struct {
	node       string
	npps       NodePodProbes
	nppLister  appslisters.NodePodProbeLister
	podLister  corelisters.PodLister
	synced     []cache.InformerSynced
	clock      clock.WithTicker
	prober     Prober
	batchDelay time.Duration
	retryDelay time.Duration
	recorder   record.EventRecorder

	syncCh  chan struct{} // the NodePodProbe spec changed
	writeCh chan struct{} // a result changed

	writes atomic.Int64 // status updates sent, for tests and the footprint bench

	sched *scheduler // runs the workers' probes

	mu      sync.Mutex
	workers map[workerKey]*worker
	results map[resultKey]result
}

// New builds an Agent and adds its handler to the NodePodProbe informer.
func New(d Deps) (*Agent, error) {
	if d.NodeName == "" {
		return nil, fmt.Errorf("probe-agent needs its node name")
	}
	if d.NodePodProbes == nil || d.PodInformer == nil || d.NodePodProbeInformer == nil {
		return nil, fmt.Errorf("probe-agent needs a NodePodProbe client and the pod and NodePodProbe informers")
	}
	a := &Agent{
		node: d.NodeName, npps: d.NodePodProbes, clock: d.Clock, prober: d.Prober,
		batchDelay: d.BatchDelay, retryDelay: d.RetryDelay, recorder: d.Recorder,
		syncCh: make(chan struct{}, 1), writeCh: make(chan struct{}, 1),
		workers: map[workerKey]*worker{}, results: map[resultKey]result{},
	}
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	a.sched = newScheduler(a.clock)
	if a.prober == nil {
		a.prober = NewProber(limitExecs(d.Exec, d.MaxConcurrentExecs))
	}
	if a.retryDelay <= 0 {
		a.retryDelay = time.Second
	}
	nppInf, podInf := d.NodePodProbeInformer, d.PodInformer
	a.nppLister = appslisters.NewNodePodProbeLister(nppInf.GetIndexer())
	a.podLister = corelisters.NewPodLister(podInf.GetIndexer())
	a.synced = []cache.InformerSynced{nppInf.HasSynced, podInf.HasSynced}
	// Pods need no handler: workers read a pod from the lister at each probe.
	_, err := nppInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(a.syncCh) },
		UpdateFunc: func(_, _ any) { signal(a.syncCh) },
		DeleteFunc: func(any) { signal(a.syncCh) },
	})
	if err != nil {
		return nil, fmt.Errorf("add NodePodProbe handler: %w", err)
	}
	return a, nil
}

// Name is the controller name for the kit/app shell.
func (a *Agent) Name() string { return "probe-agent" }

// Run syncs workers on NodePodProbe changes and writes results until ctx
// ends. workers is ignored: the probes run on the scheduler, each in a goroutine of its own while it runs.
func (a *Agent) Run(ctx context.Context, _ int) error {
	logger := klog.FromContext(ctx).WithValues("node", a.node)
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return fmt.Errorf("probe-agent: caches of node %s did not sync", a.node)
	}
	logger.Info("Probe agent started")
	scheduled := make(chan struct{})
	go func() { defer close(scheduled); a.sched.run(ctx) }()
	defer func() { a.stopWorkers(); <-scheduled }()
	signal(a.syncCh)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.syncCh:
			a.syncWorkers(ctx)
			// Entries of pods or probes that left the spec go from the status.
			signal(a.writeCh)
		case <-a.writeCh:
			if a.batchDelay > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-a.clock.After(a.batchDelay):
				}
			}
			if err := a.writeStatus(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Writing NodePodProbe status failed, retrying")
				go func() {
					select {
					case <-ctx.Done():
					case <-a.clock.After(a.retryDelay):
						signal(a.writeCh)
					}
				}()
			}
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// syncWorkers starts a worker for each probe of the spec, updates the spec
// of running ones and stops those whose probe left the spec.
func (a *Agent) syncWorkers(ctx context.Context) {
	npp, err := a.nppLister.Get(a.node)
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Reading NodePodProbe failed")
		return
	}
	wanted := map[workerKey]bool{}
	a.mu.Lock()
	defer a.mu.Unlock()
	if npp != nil {
		seeds := statusByKey(npp)
		for i := range npp.Spec.PodProbes {
			pp := &npp.Spec.PodProbes[i]
			for j := range pp.Probes {
				p := &pp.Probes[j]
				k := workerKey{UID: pp.UID, Namespace: pp.Namespace, Pod: pp.Name, Container: p.ContainerName, Probe: p.Name}
				wanted[k] = true
				if w, ok := a.workers[k]; ok {
					w.update(pp.IP, p.Probe.Probe)
					continue
				}
				var seed *appsv1alpha1.ContainerProbeState
				if s, ok := seeds[resultKey{UID: pp.UID, Probe: p.Name}]; ok {
					seed = &s
				}
				w := newWorker(a, k, pp.IP, p.Probe.Probe, seed)
				a.workers[k] = w
				a.sched.add(w)
			}
		}
	}
	for k, w := range a.workers {
		if !wanted[k] {
			w.stop()
			delete(a.workers, k)
			delete(a.results, resultKey{UID: k.UID, Probe: k.Probe})
		}
	}
}

func (a *Agent) stopWorkers() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, w := range a.workers {
		w.stop()
		delete(a.workers, k)
	}
}

func statusByKey(npp *appsv1alpha1.NodePodProbe) map[resultKey]appsv1alpha1.ContainerProbeState {
	out := map[resultKey]appsv1alpha1.ContainerProbeState{}
	for _, ps := range npp.Status.PodProbeStatuses {
		for _, st := range ps.ProbeStates {
			out[resultKey{UID: ps.UID, Probe: st.Name}] = st
		}
	}
	return out
}

// record stores a changed result and asks for a status write.
func (a *Agent) record(k resultKey, r result) {
	a.mu.Lock()
	a.results[k] = r
	a.mu.Unlock()
	signal(a.writeCh)
}

// writeStatus writes every changed result in one status update, none when
// the status already says it all.
func (a *Agent) writeStatus(ctx context.Context) error {
	npp, err := a.nppLister.Get(a.node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read NodePodProbe %s: %w", a.node, err)
	}
	a.mu.Lock()
	status := desiredStatus(npp, a.results, statusTime(a.clock.Now()))
	a.mu.Unlock()
	// Semantic: times read back from the API differ from ours in location only.
	if apiequality.Semantic.DeepEqual(npp.Status, status) {
		return nil
	}
	update := npp.DeepCopy()
	update.Status = status
	a.writes.Add(1)
	if _, err := a.npps.UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of NodePodProbe %s: %w", a.node, err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote NodePodProbe status", "nodePodProbe", klog.KObj(npp))
	if a.recorder != nil {
		for _, tr := range transitions(npp.Status, status) {
			ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: tr.Namespace, Name: tr.Name, UID: types.UID(tr.UID)}
			reason := EventProbeFailed
			if tr.State == appsv1alpha1.ProbeSucceeded {
				reason = EventProbeSucceeded
			}
			a.recorder.Eventf(ref, corev1.EventTypeNormal, reason, "probe %s: %s %s", tr.Probe, tr.State, tr.Message)
		}
	}
	return nil
}

// Writes is the number of status updates sent so far.
func (a *Agent) Writes() int64 { return a.writes.Load() }

// pod returns the pod a probe belongs to when the cache has it (same UID).
func (a *Agent) pod(k workerKey) *corev1.Pod {
	p, err := a.podLister.Pods(k.Namespace).Get(k.Pod)
	if err != nil || string(p.UID) != k.UID {
		return nil
	}
	return p
}
