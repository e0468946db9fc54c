// Package controller is the ResourceDistribution reconciler: it keeps a copy of one Secret or ConfigMap in every
// target namespace of a distribution, updates copies when the source changes, deletes them from namespaces no
// longer targeted, leaves alone objects of the same name it does not control (reporting them), and reports
// desired/succeeded/failed and six failure conditions in the status, as OpenKruise v1.9 does.
package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue (and queue metrics).
const Name = "resourcedistribution"

// Bounds of one sync. maxWritesPerSync caps the copies one sync creates, updates or deletes (the rest are
// taken up by an immediate requeue), as kube-controller-manager caps a ReplicaSet's burst, so one sync's time
// and memory stay the same whatever the number of namespaces; writesInFlight caps concurrent requests.
const (
	maxWritesPerSync = controller.MaxCreatesPerSync
	writesInFlight   = 16
)

// ownerKind matches a controllerRef to a ResourceDistribution of any served version.
var ownerKind = controller.OwnerKind{Group: appsv1alpha1.GroupName, Kind: "ResourceDistribution", ClusterScoped: true}

// controllerNameIndex indexes copies by the name of the ResourceDistribution controlling them.
const controllerNameIndex = "resourceDistribution"

// Controller reconciles ResourceDistributions.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	rds        appslisters.ResourceDistributionLister
	namespaces corelisters.NamespaceLister
	// copies holds, per kind, the informer cache of the Secrets or ConfigMaps carrying CopyLabel.
	copies  map[string]cache.Indexer
	written *expectations.ResourceVersion
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers the reconciler needs from d's factories (the Secret and ConfigMap informers list
// only objects labelled CopyLabel, across all namespaces: a distribution is cluster-scoped, so --namespace does
// not narrow them), registers its event handlers and returns it. Nothing starts until the factories are
// started and Run is called.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{written: d.ResourceVersionExpectations()}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	rdInf := d.Informers.Apps().V1alpha1().ResourceDistributions()
	nsInf := d.KubeInformers.Core().V1().Namespaces()
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = CopyLabel + "=true" }
	indexers := cache.Indexers{controllerNameIndex: indexByControllerName}
	secInf := d.KubeInformers.InformerFor(&corev1.Secret{}, func(k kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredSecretInformer(k, metav1.NamespaceAll, resync, indexers, tweak)
	})
	cmInf := d.KubeInformers.InformerFor(&corev1.ConfigMap{}, func(k kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(k, metav1.NamespaceAll, resync, indexers, tweak)
	})
	for _, inf := range []cache.SharedIndexInformer{secInf, cmInf} {
		if err := inf.SetTransform(controller.StripManagedFields); err != nil {
			return nil, fmt.Errorf("resourcedistribution: set transform: %w", err)
		}
	}
	c.rds, c.namespaces = rdInf.Lister(), nsInf.Lister()
	c.copies = map[string]cache.Indexer{kindSecret: secInf.GetIndexer(), kindConfigMap: cmInf.GetIndexer()}
	c.WaitFor(rdInf.Informer().HasSynced, nsInf.Informer().HasSynced, secInf.HasSynced, cmInf.HasSynced)
	if err := c.addHandlers(rdInf.Informer(), nsInf.Informer(), secInf, cmInf); err != nil {
		return nil, fmt.Errorf("resourcedistribution: %w", err)
	}
	return c, nil
}

// indexByControllerName indexes a copy under the name of the ResourceDistribution controlling it.
func indexByControllerName(obj any) ([]string, error) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return nil, nil
	}
	if key, ok := ownerKind.ControllerKey(o); ok {
		return []string{key.Name}, nil
	}
	return nil, nil
}
