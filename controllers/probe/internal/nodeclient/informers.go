package nodeclient

import (
	"context"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// Informers builds the agent's informers, all namespaces, each filtered by a selector, caching objects without
// their managedFields (kit/controller.StripManagedFields), with the resync period given to Clients.Informers;
// and starts and waits on them as a shared informer factory does. It satisfies kit/app's InformerFactory (Start,
// WaitForCacheSync) and kit/testenv's (Start, Shutdown).
//
// As with a factory, asking twice for the same kind with the same selector returns the same informer, and
// Start starts those not started yet: ask for every informer (and add handlers and indexers) before Start.
type Informers struct {
	clients *Clients
	resync  time.Duration

	mu        sync.Mutex
	informers map[informerKey]cache.SharedIndexInformer
	started   map[informerKey]bool
	wg        sync.WaitGroup
	shutdown  bool
}

type informerKey struct {
	typ      reflect.Type
	selector string
}

// Informers returns an empty set of informers with resync period resync (0: none).
func (c *Clients) Informers(resync time.Duration) *Informers {
	return &Informers{clients: c, resync: resync, informers: map[informerKey]cache.SharedIndexInformer{}, started: map[informerKey]bool{}}
}

// Pods is the informer of the pods that fieldSelector selects (the agent's: spec.nodeName=<node>, see
// agent.NodePodFieldSelector), indexed by namespace (corev1listers.NewPodLister over its indexer).
func (f *Informers) Pods(fieldSelector string) cache.SharedIndexInformer {
	return f.informer(f.clients.Core, "pods", &corev1.Pod{}, namespaced, fieldSelector, "")
}

// NodePodProbes is the informer of the NodePodProbes that fieldSelector selects (metadata.name=<node>, see
// agent.NodeNameFieldSelector).
func (f *Informers) NodePodProbes(fieldSelector string) cache.SharedIndexInformer {
	return f.informer(f.clients.AppsV1alpha1, "nodepodprobes", &appsv1alpha1.NodePodProbe{}, clusterScoped, fieldSelector, "")
}

// ContainerRecreateRequests is the informer of the ContainerRecreateRequests that labelSelector selects (the
// node's active ones, see recreate.NodeLabelSelector), indexed by namespace.
func (f *Informers) ContainerRecreateRequests(labelSelector string) cache.SharedIndexInformer {
	return f.informer(f.clients.AppsV1alpha1, "containerrecreaterequests", &appsv1alpha1.ContainerRecreateRequest{}, namespaced, "", labelSelector)
}

// NodeImages is the informer of the (v1beta1) NodeImages that fieldSelector selects (metadata.name=<node>).
func (f *Informers) NodeImages(fieldSelector string) cache.SharedIndexInformer {
	return f.informer(f.clients.AppsV1beta1, "nodeimages", &appsv1beta1.NodeImage{}, clusterScoped, fieldSelector, "")
}

type scope bool

const (
	namespaced    scope = true
	clusterScoped scope = false
)

func (f *Informers) informer(client rest.Interface, resource string, obj runtime.Object, s scope, fieldSelector, labelSelector string) cache.SharedIndexInformer {
	key := informerKey{typ: reflect.TypeOf(obj), selector: "fields:" + fieldSelector + " labels:" + labelSelector}
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[key]; ok {
		return inf
	}
	indexers := cache.Indexers{}
	if s == namespaced {
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	tweak := func(o *metav1.ListOptions) {
		o.FieldSelector, o.LabelSelector = fieldSelector, labelSelector
	}
	inf := cache.NewSharedIndexInformerWithOptions(listWatch(client, resource, tweak), obj,
		cache.SharedIndexInformerOptions{ResyncPeriod: f.resync, Indexers: indexers})
	// Cannot fail: the informer has not started.
	_ = inf.SetTransform(controller.StripManagedFields)
	f.informers[key] = inf
	return inf
}

// listWatch lists and watches resource in all namespaces through client, with tweak applied to the options.
func listWatch(client rest.Interface, resource string, tweak func(*metav1.ListOptions)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return client.Get().Resource(resource).VersionedParams(&o, ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			tweak(&o)
			return client.Get().Resource(resource).VersionedParams(&o, ParameterCodec).Watch(ctx)
		},
	}
}

// Start runs every informer not started yet until stopCh is closed.
func (f *Informers) Start(stopCh <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	for key, inf := range f.informers {
		if f.started[key] {
			continue
		}
		f.started[key] = true
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			inf.Run(stopCh)
		}()
	}
}

// WaitForCacheSync waits until every started informer has synced or stopCh is closed, and reports which did,
// by the type of object they cache.
func (f *Informers) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	f.mu.Lock()
	started := map[informerKey]cache.SharedIndexInformer{}
	for key, inf := range f.informers {
		if f.started[key] {
			started[key] = inf
		}
	}
	f.mu.Unlock()
	out := map[reflect.Type]bool{}
	for key, inf := range started {
		synced := cache.WaitForCacheSync(stopCh, inf.HasSynced)
		if done, ok := out[key.typ]; ok {
			synced = synced && done
		}
		out[key.typ] = synced
	}
	return out
}

// Shutdown waits until every informer Start started has stopped (close Start's stopCh first); no informer
// starts after it.
func (f *Informers) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	f.mu.Unlock()
	f.wg.Wait()
}
