// Package imagepuller is the node agent's NodeImage worker, kruise-daemon's imagepuller: it pulls, through the
// node's CRI image service, every image tag its node's NodeImage lists and not yet pulled at the tag's version,
// with the tag's pull policy and the image's pull secrets, at most --max-concurrent-pulls at a time, and writes
// the NodeImage status per image tag as kruise-daemon does (Waiting, Pulling, Succeeded or Failed, progress,
// message, startTime, completionTime, imageID, version).
//
// Crash safety: what is pulling lives in memory only; the status is rebuilt from it. A restarted agent takes a
// status entry as done only when it has a completionTime at the spec's version, so a pull in flight when the
// agent died is pulled again, and Succeeded is written only after the runtime's ImageStatus lists the image.
package imagepuller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
)

// Name is the worker's name in logs and the name of its queue.
const Name = "imagepuller"

// DefaultMaxConcurrentPulls is --max-concurrent-pulls' default.
const DefaultMaxConcurrentPulls = 2

// SecretGetter reads the Secrets of one namespace: nodeclient's Secrets(ns), or a clientset's
// CoreV1().Secrets(ns) in tests.
type SecretGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// Deps are what the worker is built from.
type Deps struct {
	NodeName string
	// NodeImages writes the NodeImage status (nodeclient's NodeImages(), or a clientset's
	// AppsV1beta1().NodeImages() in tests).
	NodeImages controller.StatusUpdater[*appsv1beta1.NodeImage]
	// Secrets reads the pull secrets (get, in the namespaces the NodeImage names: the agent's own).
	Secrets func(namespace string) SecretGetter
	// NodeImageInformer lists this node's (v1beta1) NodeImage (field selector metadata.name=<node>); the caller
	// starts it.
	NodeImageInformer cache.SharedIndexInformer
	Images            cri.Images
	Clock             clock.WithTicker
	Recorder          record.EventRecorder
	Queue             controller.QueueOptions
	// BatchDelay gathers the task changes within it into one status write.
	BatchDelay time.Duration
	// MaxConcurrentPulls bounds the PullImage calls in flight (0: DefaultMaxConcurrentPulls).
	MaxConcurrentPulls int
}

// Worker pulls the images of one node's NodeImage.
type Worker struct {
	node       string
	nodeImages controller.StatusUpdater[*appsv1beta1.NodeImage]
	secretsIn  func(namespace string) SecretGetter
	lister     appslisters.NodeImageLister
	images     cri.Images
	clock      clock.WithTicker
	recorder   record.EventRecorder
	batchDelay time.Duration
	slots      chan struct{}
	written    *expectations.ResourceVersion

	mu    sync.Mutex
	tasks map[tagKey]*task
	*controller.Reconciler[string]
}

// New builds the worker over the NodeImage informer of its node.
func New(d Deps) (*Worker, error) {
	if d.NodeName == "" || d.NodeImages == nil || d.Secrets == nil || d.NodeImageInformer == nil || d.Images == nil || d.Recorder == nil {
		return nil, fmt.Errorf("%s: node name, clients, NodeImage informer, CRI image service and recorder are required", Name)
	}
	clk := d.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	n := d.MaxConcurrentPulls
	if n <= 0 {
		n = DefaultMaxConcurrentPulls
	}
	inf := d.NodeImageInformer
	w := &Worker{
		node: d.NodeName, nodeImages: d.NodeImages, secretsIn: d.Secrets, lister: appslisters.NewNodeImageLister(inf.GetIndexer()),
		images: d.Images, clock: clk, recorder: d.Recorder, batchDelay: d.BatchDelay, slots: make(chan struct{}, n),
		written: expectations.NewResourceVersion(), tasks: map[tagKey]*task{},
	}
	w.Reconciler = controller.NewReconciler(Name, d.Queue, controller.QueueConfig{}, w.sync)
	w.WaitFor(inf.HasSynced)
	if _, err := inf.AddEventHandler(controller.OnEvery(func(obj any) {
		if ni, ok := obj.(*appsv1beta1.NodeImage); ok && ni.Name == w.node {
			w.Queue.Enqueue(ni.Name)
		} else if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			w.Queue.Enqueue(w.node)
		}
	})); err != nil {
		return nil, fmt.Errorf("%s: add handler: %w", Name, err)
	}
	return w, nil
}

// changed is called by a task whose status changed: the status is written after the batch delay, with the other
// changes of that delay.
func (w *Worker) changed() { w.Queue.AddAfter(w.node, w.batchDelay) }

// sync starts and stops the tasks the spec asks for and writes the status they give.
func (w *Worker) sync(ctx context.Context, name string) error {
	ni, err := w.lister.Get(name)
	if apierrors.IsNotFound(err) {
		w.stopAll()
		return nil
	}
	if err != nil {
		return fmt.Errorf("get NodeImage %s: %w", name, err)
	}
	if ok, wait := w.written.Satisfied(ni); !ok {
		w.Queue.AddAfter(name, wait)
		return nil
	}
	w.apply(ctx, ni)
	next := buildStatus(&ni.Spec, w.statuses(), &ni.Status)
	if _, err := controller.WriteStatus(ctx, w.nodeImages, ni,
		func(o *appsv1beta1.NodeImage) *appsv1beta1.NodeImageStatus { return &o.Status }, next, w.written); err != nil {
		return fmt.Errorf("write NodeImage %s status: %w", name, err)
	}
	return nil
}

// apply carries out the plan for ni: stops, adoptions and new tasks.
func (w *Worker) apply(ctx context.Context, ni *appsv1beta1.NodeImage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	versions := make(map[tagKey]int64, len(w.tasks))
	for k, t := range w.tasks {
		versions[k] = t.version
	}
	p := decide(&ni.Spec, &ni.Status, versions)
	for _, k := range p.Stop {
		w.tasks[k].stop()
		delete(w.tasks, k)
	}
	for k, st := range p.Adopt {
		w.tasks[k] = &task{version: st.Version, status: st, cancel: func() {}}
	}
	for _, k := range p.Start {
		img := ni.Spec.Images[k.Image]
		var spec appsv1beta1.ImageTagSpec
		for _, t := range img.Tags {
			if t.Tag == k.Tag {
				spec = t
			}
		}
		w.tasks[k] = w.start(ctx, ni, k, spec, img.PullSecrets, img.SandboxConfig)
	}
}

// statuses is a snapshot of every task's status.
func (w *Worker) statuses() map[tagKey]appsv1beta1.ImageTagStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[tagKey]appsv1beta1.ImageTagStatus, len(w.tasks))
	for k, t := range w.tasks {
		out[k] = t.snapshot()
	}
	return out
}

// stopAll cancels every task (the NodeImage is gone).
func (w *Worker) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, t := range w.tasks {
		t.stop()
		delete(w.tasks, k)
	}
}

// secrets gets the pull secrets refs names; one that cannot be read is skipped (logged), as kruise-daemon does:
// the pull then goes without it and fails if the registry wants it.
func (w *Worker) secrets(ctx context.Context, refs []appsv1beta1.ReferenceObject) []corev1.Secret {
	var out []corev1.Secret
	for _, r := range refs {
		s, err := w.secretsIn(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			loggerFrom(ctx).Error(err, "Cannot read pull secret", "secret", r.String())
			continue
		}
		out = append(out, *s)
	}
	return out
}
