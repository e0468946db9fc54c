// Package controller is the UnitedDeployment reconciler: for each subset of a UnitedDeployment's topology it keeps
// one workload (CloneSet, Deployment, StatefulSet or Advanced StatefulSet, as the template says), named, labelled
// and owned as OpenKruise does, with the subset's share of the replicas, its partition, node affinity, tolerations
// and patch; it deletes the workloads of subsets removed from the topology, records the template history in
// ControllerRevisions and reports the totals in the status. It never touches a pod: each workload's own
// controller runs the pods.
package controller

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/revision/revisionclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue.
const Name = "uniteddeployment"

// SubsetLabelSelector is the server-side filter of the workload and pod informers: only objects carrying the
// subset label — those a UnitedDeployment created, and their pods — are cached.
const SubsetLabelSelector = appsv1alpha1.SubSetNameLabelKey

// SubsetInformers are the informer factories of the subset workloads and their pods, filtered server-side by
// SubsetLabelSelector. They must be started with the Deps' factories.
type SubsetInformers struct {
	Kube     informers.SharedInformerFactory
	Flotilla flotillainformers.SharedInformerFactory
}

// NewSubsetInformers builds the filtered factories over the given clients, limited to namespace ("" for all).
func NewSubsetInformers(kube kubernetes.Interface, client versioned.Interface, namespace string) SubsetInformers {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = SubsetLabelSelector }
	return SubsetInformers{
		Kube: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
			informers.WithTweakListOptions(tweak), informers.WithTransform(kitcontroller.StripManagedFields)),
		Flotilla: flotillainformers.NewSharedInformerFactoryWithOptions(client, 0, flotillainformers.WithNamespace(namespace),
			flotillainformers.WithTweakListOptions(tweak), flotillainformers.WithTransform(kitcontroller.StripManagedFields)),
	}
}

// podsBySubset indexes pods by "<namespace>/<subset name>".
const podsBySubset = "uniteddeployment-subset"

// Controller reconciles UnitedDeployments.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	uds       appslisters.UnitedDeploymentLister
	revisions *revision.Lister
	revCtl    revision.Control
	pods      cache.Indexer
	kinds     map[Kind]workloads
	// creates remembers subset workloads created but not yet seen in the cache, so that a sync on a stale cache
	// does not create a second one (its name is generated, so nothing else would stop it).
	creates *expectations.Node[types.NamespacedName]
	// written remembers this controller's writes to UnitedDeployments and subset workloads until the cache shows them.
	written *expectations.ResourceVersion
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers the reconciler needs and registers its handlers. kinds are the subset kinds the API
// server serves (nil: all four); a UnitedDeployment asking for another kind is reported, not reconciled.
func New(d wiring.Deps, sub SubsetInformers, kinds []Kind) (*Controller, error) {
	c := &Controller{revCtl: revisionclient.New(d.Kube), kinds: map[Kind]workloads{}}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	if sub.Kube == nil || sub.Flotilla == nil {
		return nil, errors.New("uniteddeployment: clients, informer factories and an event recorder are required")
	}
	if kinds == nil {
		kinds = AllKinds
	}
	clk := d.PassiveClock()
	var opts []expectations.Option
	if d.ExpectationTimeout > 0 {
		opts = append(opts, expectations.WithTimeout(d.ExpectationTimeout))
	}
	opts = append(opts, expectations.WithClock(clk))
	udInf := d.Informers.Apps().V1alpha1().UnitedDeployments()
	revInf := d.KubeInformers.Apps().V1().ControllerRevisions().Informer()
	podInf := sub.Kube.Core().V1().Pods().Informer()
	if err := podInf.SetTransform(kitcontroller.SlimPod); err != nil {
		return nil, fmt.Errorf("uniteddeployment: slim pods: %w", err)
	}
	if err := podInf.AddIndexers(cache.Indexers{podsBySubset: indexPodBySubset}); err != nil {
		return nil, fmt.Errorf("uniteddeployment: index pods: %w", err)
	}
	c.uds, c.revisions, c.pods = udInf.Lister(), revision.NewLister(revInf.GetIndexer()), podInf.GetIndexer()
	c.creates = expectations.NewNode[types.NamespacedName](opts...)
	c.written = expectations.NewResourceVersion(opts...)
	for _, k := range kinds {
		switch k {
		case KindCloneSet:
			c.kinds[k] = newCloneSets(d.Client, sub.Flotilla.Apps().V1alpha1().CloneSets().Informer())
		case KindAdvancedStatefulSet:
			c.kinds[k] = newAdvancedStatefulSets(d.Client, sub.Flotilla.Apps().V1beta1().StatefulSets().Informer())
		case KindDeployment:
			c.kinds[k] = newDeployments(d.Kube, sub.Kube.Apps().V1().Deployments().Informer())
		case KindStatefulSet:
			c.kinds[k] = newStatefulSets(d.Kube, sub.Kube.Apps().V1().StatefulSets().Informer())
		default:
			return nil, fmt.Errorf("uniteddeployment: unknown subset kind %q", k)
		}
	}
	c.WaitFor(udInf.Informer().HasSynced, revInf.HasSynced, podInf.HasSynced)
	// The informers are this reconciler's alone (one per binary), so the owner index is added once.
	if err := kitcontroller.AddOwnerUIDIndex(revInf); err != nil {
		return nil, fmt.Errorf("uniteddeployment: index revisions by owner: %w", err)
	}
	for k, w := range c.kinds {
		if err := kitcontroller.AddOwnerUIDIndex(w.informer()); err != nil {
			return nil, fmt.Errorf("uniteddeployment: index %ss by owner: %w", k, err)
		}
		c.WaitFor(w.informer().HasSynced)
	}
	if err := c.addHandlers(udInf.Informer(), podInf); err != nil {
		return nil, fmt.Errorf("uniteddeployment: %w", err)
	}
	return c, nil
}

func indexPodBySubset(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	name, ok := p.Labels[appsv1alpha1.SubSetNameLabelKey]
	if !ok {
		return nil, nil
	}
	return []string{p.Namespace + "/" + name}, nil
}
