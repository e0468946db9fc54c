// Package containermeta is the node agent's env-from-metadata worker,
// kruise-daemon's containermeta controller (gate InPlaceUpdateEnvFromMetadata):
// for the pods of its node that a workload updates in place and whose
// containers read labels/annotations into their env, it records in the pod
// annotation apps.kruise.io/runtime-containers-meta what each running
// container was started with (the hash of that env, read from the runtime),
// and during an in-place update stops, through the CRI runtime, every
// container whose env from metadata changed, so the kubelet starts it again
// with the new values. The workloads (kit/inplace.UpdateCompleted) read the
// annotation to know that the restart happened.
package containermeta

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Name is the worker's name in logs and the name of its queue.
const Name = "containermeta-agent"

// DefaultSettleDelay is how long a container whose env from metadata changed keeps running before it is stopped:
// the kubelet must have seen the new labels/annotations before it starts the new container, or it starts it with
// the old values (seen on a loaded node 0.5 s after the change) and the container needs a second restart.
// OpenKruise's restarter waits 3 s (its rate limiter's base delay).
const DefaultSettleDelay = 3 * time.Second

// retryInterval is how soon a pod whose container env could not be read is
// looked at again (OpenKruise: 3 s).
const retryInterval = 3 * time.Second

// Runtime is what the worker uses of the node's CRI runtime service.
type Runtime interface {
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	StopContainer(ctx context.Context, containerID string, timeout int64) error
}

// PodPatcher writes the difference between a cached pod and a modified deep
// copy of it: kit/podcontrol's PodControl has it (podcontrol.NewFor over
// nodeclient's pod writer).
type PodPatcher interface {
	Patch(ctx context.Context, pod, next *corev1.Pod) (*corev1.Pod, error)
}

// Deps are what the worker is built from.
type Deps struct {
	// PodInformer lists this node's pods (the agent's, shared with the
	// probes and the ContainerRecreateRequest worker; started by the caller).
	PodInformer cache.SharedIndexInformer
	// Pods writes the annotation.
	Pods     PodPatcher
	Runtime  Runtime
	Recorder record.EventRecorder
	Queue    controller.QueueOptions
	// Clock is the clock of the settle delay (nil: the real clock).
	Clock clock.PassiveClock
	// SettleDelay overrides DefaultSettleDelay when positive.
	SettleDelay time.Duration
}

// Worker keeps runtime-containers-meta and restarts containers for one node.
type Worker struct {
	lister   corelisters.PodLister
	pods     PodPatcher
	runtime  Runtime
	recorder record.EventRecorder
	clock    clock.PassiveClock
	settle   time.Duration
	// seen is when a restart (container ID and the hash it is to run) was first decided: it is carried out once
	// settle has passed. Lost with the process, which only delays a restart.
	mu   sync.Mutex
	seen map[restart]time.Time
	*controller.Reconciler[types.NamespacedName]
}

// New builds the worker over the agent's pod informer (already scoped to
// its node).
func New(d Deps) (*Worker, error) {
	if d.PodInformer == nil || d.Pods == nil || d.Runtime == nil || d.Recorder == nil {
		return nil, fmt.Errorf("%s: pod informer, pod patcher, CRI runtime and recorder are required", Name)
	}
	podInf := d.PodInformer
	w := &Worker{lister: corelisters.NewPodLister(podInf.GetIndexer()), pods: d.Pods, runtime: d.Runtime, recorder: d.Recorder,
		clock: d.Clock, settle: d.SettleDelay, seen: map[restart]time.Time{}}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	if w.settle <= 0 {
		w.settle = DefaultSettleDelay
	}
	w.Reconciler = controller.NewReconciler(Name, d.Queue, controller.QueueConfig{}, w.sync)
	w.WaitFor(podInf.HasSynced)
	if _, err := podInf.AddEventHandler(controller.OnEvery(func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && inScope(pod) {
			w.Queue.Enqueue(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
	})); err != nil {
		return nil, fmt.Errorf("%s: add handler: %w", Name, err)
	}
	return w, nil
}

// due says whether r, decided now, may be carried out, or how long it must still wait (DefaultSettleDelay).
func (w *Worker) due(r restart) (bool, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	for old, at := range w.seen {
		// A restart decided long ago and never due again was dropped (the pod went, the label came back).
		if now.Sub(at) > 10*w.settle {
			delete(w.seen, old)
		}
	}
	first, ok := w.seen[r]
	if !ok {
		w.seen[r], first = now, now
	}
	if left := w.settle - now.Sub(first); left > 0 {
		return false, left
	}
	delete(w.seen, r)
	return true, 0
}
