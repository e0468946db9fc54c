package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
)

// The floor of a CloneSet's writes: the scale-up's requests without the
// controller's decisions. The bench process creates pods shaped as
// cloneset-controller creates them (controlled by a CloneSet that no
// controller syncs; instance-id, revision, pod-template-hash and
// PreparingNormal labels; both readiness gates) and, once a pod is bound,
// writes its gate conditions and its move to Normal in one pods/status patch,
// as the controller's pod loop does. The Deployment → floor gap is what that
// write costs the control plane (and the simulated kubelets that race it);
// the floor → CloneSet gap is what the controller itself costs.

const (
	floorUserAgent = "flotilla-bench-writes-floor"
	// floorWorkers matches cloneset-controller's pod-loop workers at its
	// defaults (3 workers × 16).
	floorWorkers = 48
)

// floorGates are the readiness gates a CloneSet's pods carry and whose first
// conditions the writer writes.
var floorGates = []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType}

func isWritesFloor(_, agent string) bool { return strings.HasPrefix(agent, floorUserAgent) }

// gateWriter writes bound pods' first status, from its own pod informer.
type gateWriter struct {
	kube  kubernetes.Interface
	owner *appsv1alpha1.CloneSet
	store cache.Store
	queue workqueue.TypedRateLimitingInterface[string]
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startGateWriter creates the owner CloneSet (no replicas: nothing syncs it)
// and starts the writer on ns (Stop ends it).
func (b *bench) startGateWriter(ns string, labels map[string]string) *gateWriter {
	owner, err := b.client.AppsV1alpha1().CloneSets(ns).Create(context.Background(), newCloneSet("scaleup", 0, labels, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType), metav1.CreateOptions{})
	mustNoErr(b.t, err, "create the owner CloneSet")
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(*flagQPS), *flagBurst, floorUserAgent
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(cfg)
	mustNoErr(b.t, err, "writer client")
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	w := &gateWriter{kube: kube, owner: owner, store: inf.GetStore(), queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()), stop: make(chan struct{})}
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && needsGates(p) {
			w.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }})
	mustNoErr(b.t, err, "writer handler")
	f.Start(w.stop)
	f.WaitForCacheSync(w.stop)
	for range floorWorkers {
		w.wg.Go(w.work)
	}
	return w
}

// Stop ends the writer and waits for its workers.
func (w *gateWriter) Stop() {
	close(w.stop)
	w.queue.ShutDown()
	w.wg.Wait()
}

func (w *gateWriter) work() {
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		// A conflict needs no retry: the newer pod's event brings it back.
		if err := w.write(key); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			w.queue.AddRateLimited(key)
		} else {
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

func (w *gateWriter) write(key string) error {
	obj, exists, err := w.store.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	p := obj.(*corev1.Pod)
	if !needsGates(p) {
		return nil
	}
	now := time.Now()
	next := podreadiness.WithGateConditions(p, now, floorGates...)
	next.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[pub.LifecycleTimestampKey] = now.UTC().Format(time.RFC3339)
	_, err = podclient.New(w.kube).PatchStatus(context.Background(), p, next)
	return err
}

// needsGates: the pod is waiting for the write that makes it Ready.
func needsGates(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && podreadiness.MissingGateCondition(p, floorGates...)
}

// createPods creates n pods as cloneset-controller would for the owner, with
// the bench's QPS/burst and concurrency.
func (w *gateWriter) createPods(n int) error {
	owner, tmpl := w.owner, w.owner.Spec.Template
	var gates []corev1.PodReadinessGate
	for _, g := range floorGates {
		gates = append(gates, corev1.PodReadinessGate{ConditionType: g})
	}
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range *flagConcurrency {
		wg.Go(func() {
			for i := range jobs {
				id := fmt.Sprintf("w%04d", i)
				pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
				pod.Name = owner.Name + "-" + id
				pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))}
				pod.Labels[pub.CloneSetInstanceID] = id
				pod.Labels[pub.ControllerRevisionHashLabelKey] = owner.Name + "-5d8f7c9b6d"
				pod.Labels[pub.PodTemplateHashLabelKey] = "5d8f7c9b6d"
				pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
				pod.Spec.ReadinessGates = gates
				if _, err := w.kube.CoreV1().Pods(owner.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod %s: %w", pod.Name, err)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return <-errs
}
