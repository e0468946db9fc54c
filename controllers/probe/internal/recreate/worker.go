// Package recreate is the node agent's ContainerRecreateRequest worker, kruise-daemon's containerrecreate
// controller: for the requests of pods on its node (stamped by containerrecreate-controller), it runs each
// container's preStop through the CRI runtime, stops the container and reports, as the kubelet starts the new
// one, the per-container states and the completion in the request's status.
package recreate

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Name is the worker's name in logs and the name of its queue.
const Name = "containerrecreaterequest-agent"

// pollInterval is how often a recreating request looks at the runtime again without an event (the controller's
// status sync is the usual trigger).
const pollInterval = 2 * time.Second

// podNameIndex indexes requests by "<namespace>/<spec.podName>": the worker's key is the pod, one request of a
// pod at a time.
const podNameIndex = "podName"

// Runtime is what the worker uses of the node's CRI runtime service.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	StopContainer(ctx context.Context, containerID string, timeout int64) error
}

// StatusWriter writes the status of the ContainerRecreateRequests of one namespace: nodeclient's
// ContainerRecreateRequests(ns), or a Flotilla clientset's AppsV1alpha1().ContainerRecreateRequests(ns) in tests.
type StatusWriter interface {
	UpdateStatus(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, opts metav1.UpdateOptions) (*appsv1alpha1.ContainerRecreateRequest, error)
}

// NodeLabelSelector selects the active ContainerRecreateRequests of node: the labels OpenKruise's manager and
// containerrecreate-controller stamp on them. The worker's request informer must select them so.
func NodeLabelSelector(node string) string {
	return fmt.Sprintf("%s=%s,%s=true", appsv1alpha1.ContainerRecreateRequestNodeNameKey, node, appsv1alpha1.ContainerRecreateRequestActiveKey)
}

// Deps are what the worker is built from.
type Deps struct {
	NodeName string
	// Requests returns the status writer of the requests of a namespace.
	Requests func(namespace string) StatusWriter
	// RequestInformer lists the active requests of the node (label selector NodeLabelSelector), not started
	// yet: New adds an index to it. The caller starts it.
	RequestInformer cache.SharedIndexInformer
	// PodInformer lists this node's pods (the agent's, shared with the probes).
	PodInformer cache.SharedIndexInformer
	Runtime     Runtime
	Clock       clock.PassiveClock
	Recorder    record.EventRecorder
	Queue       controller.QueueOptions
	// HTTP runs httpGet preStop hooks (nil: a client with the hook's timeout, no redirects off the pod's host).
	HTTP *http.Client
}

// Worker recreates containers for the ContainerRecreateRequests of one node.
type Worker struct {
	client   func(namespace string) StatusWriter
	index    cache.Indexer
	pods     corelisters.PodLister
	runtime  Runtime
	clock    clock.PassiveClock
	recorder record.EventRecorder
	http     *http.Client
	*controller.Reconciler[types.NamespacedName]
}

// New builds the worker over the informer of the active requests of its node (see Deps.RequestInformer) and the
// agent's pod informer.
func New(d Deps) (*Worker, error) {
	if d.NodeName == "" || d.Requests == nil || d.RequestInformer == nil || d.PodInformer == nil || d.Runtime == nil || d.Recorder == nil {
		return nil, fmt.Errorf("%s: node name, request client, request and pod informers, CRI runtime and recorder are required", Name)
	}
	inf := d.RequestInformer
	if err := inf.AddIndexers(cache.Indexers{podNameIndex: func(obj any) ([]string, error) {
		if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok {
			return []string{crr.Namespace + "/" + crr.Spec.PodName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: add index: %w", Name, err)
	}
	podInf := d.PodInformer
	clk := d.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	w := &Worker{
		client: d.Requests, index: inf.GetIndexer(), pods: corelisters.NewPodLister(podInf.GetIndexer()),
		runtime: d.Runtime, clock: clk, recorder: d.Recorder, http: d.HTTP,
	}
	w.Reconciler = controller.NewReconciler(Name, d.Queue, controller.QueueConfig{}, w.sync)
	w.WaitFor(inf.HasSynced, podInf.HasSynced)
	if _, err := inf.AddEventHandler(controller.OnEvery(func(obj any) {
		if crr, ok := obj.(*appsv1alpha1.ContainerRecreateRequest); ok && crr.DeletionTimestamp == nil && crr.Status.CompletionTime == nil {
			w.Queue.Enqueue(types.NamespacedName{Namespace: crr.Namespace, Name: crr.Spec.PodName})
		}
	})); err != nil {
		return nil, fmt.Errorf("%s: add handler: %w", Name, err)
	}
	return w, nil
}

// requests returns the unfinished requests of the pod key names, in the order they are served.
func (w *Worker) requests(key types.NamespacedName) ([]*appsv1alpha1.ContainerRecreateRequest, error) {
	objs, err := w.index.ByIndex(podNameIndex, key.Namespace+"/"+key.Name)
	if err != nil {
		return nil, fmt.Errorf("list ContainerRecreateRequests of pod %s: %w", key, err)
	}
	var out []*appsv1alpha1.ContainerRecreateRequest
	for _, o := range objs {
		if crr, ok := o.(*appsv1alpha1.ContainerRecreateRequest); ok && crr.DeletionTimestamp == nil && crr.Status.CompletionTime == nil {
			out = append(out, crr)
		}
	}
	byPhaseAndAge(out)
	return out, nil
}

// containers returns the latest container of each name the runtime has for the pod.
func (w *Worker) containers(ctx context.Context, podUID string) (map[string]container, error) {
	list, err := w.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": podUID}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", podUID, err)
	}
	out := map[string]container{}
	attempt := map[string]uint32{}
	for _, c := range list {
		name := c.GetMetadata().GetName()
		if prev, ok := out[name]; ok && (c.GetMetadata().GetAttempt() < attempt[name] ||
			c.GetMetadata().GetAttempt() == attempt[name] && time.Unix(0, c.GetCreatedAt()).Before(prev.CreatedAt)) {
			continue
		}
		attempt[name] = c.GetMetadata().GetAttempt()
		out[name] = container{ID: c.GetId(), Running: c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: time.Unix(0, c.GetCreatedAt())}
	}
	return out, nil
}

// pod returns the request's pod from the agent's cache of its node's pods, nil when it is not there (or is
// another pod of that name).
func (w *Worker) pod(crr *appsv1alpha1.ContainerRecreateRequest) *corev1.Pod {
	pod, err := w.pods.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if err != nil || string(pod.UID) != crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] {
		return nil
	}
	return pod
}
