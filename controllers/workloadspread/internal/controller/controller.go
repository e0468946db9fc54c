// Package controller is the WorkloadSpread reconciler: it counts each
// subset's pods into status.subsetStatuses (replicas, missingReplicas, and
// the webhook's creatingPods/deletingPods entries expired or confirmed),
// writes the pod-deletion-cost that makes the workload delete from the
// right subset, reschedules pods a subset cannot place (Adaptive), and
// reports pods of its workload the webhook missed. The pod webhook in
// internal/webhook places pods at creation. controllers/workloadspread/README.md
// describes the behaviour.
package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "workloadspread"

// Controller reconciles WorkloadSpreads.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	podControl podcontrol.PodControl
	spreads    appslisters.WorkloadSpreadLister
	targets    workload.Listers
	pods       cache.Indexer
	rsIndex    cache.Indexer
	written    *expectations.ResourceVersion
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers from d's factories (WorkloadSpreads, pods,
// the five target kinds), registers the handlers and returns the
// reconciler.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{podControl: podclient.Or(d.PodControl, d.Kube), written: expectations.NewResourceVersion()}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	wsInf := d.Informers.Apps().V1alpha1().WorkloadSpreads()
	podInf := d.KubeInformers.Core().V1().Pods()
	rsInf := d.KubeInformers.Apps().V1().ReplicaSets()
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), rsInf.Informer()} {
		if err := controller.AddOwnerUIDIndex(inf); err != nil {
			return nil, fmt.Errorf("owner index: %w", err)
		}
	}
	c.spreads = wsInf.Lister()
	c.targets = workload.Listers{Deployments: d.KubeInformers.Apps().V1().Deployments().Lister(), ReplicaSets: rsInf.Lister(),
		StatefulSets: d.KubeInformers.Apps().V1().StatefulSets().Lister(), Jobs: d.KubeInformers.Batch().V1().Jobs().Lister(),
		CloneSets: d.Informers.Apps().V1alpha1().CloneSets().Lister(), Advanced: d.Informers.Apps().V1beta1().StatefulSets().Lister()}
	c.pods, c.rsIndex = podInf.Informer().GetIndexer(), rsInf.Informer().GetIndexer()
	if _, err := wsInf.Informer().AddEventHandler(controller.NewKeyHandler(c.Queue)); err != nil {
		return nil, fmt.Errorf("workloadspread handler: %w", err)
	}
	byNamespace := controller.OnEvery(func(obj any) { c.enqueueFor(obj) })
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), rsInf.Informer(),
		d.KubeInformers.Apps().V1().Deployments().Informer(), d.KubeInformers.Apps().V1().StatefulSets().Informer(),
		d.KubeInformers.Batch().V1().Jobs().Informer(), d.Informers.Apps().V1alpha1().CloneSets().Informer(),
		d.Informers.Apps().V1beta1().StatefulSets().Informer()} {
		if _, err := inf.AddEventHandler(byNamespace); err != nil {
			return nil, fmt.Errorf("workloadspread dependent handler: %w", err)
		}
		c.WaitFor(inf.HasSynced)
	}
	c.WaitFor(wsInf.Informer().HasSynced)
	return c, nil
}

// enqueueFor maps a pod or workload event to the WorkloadSpreads it can
// concern: the one a pod's annotation names, else those of its namespace
// (a handful; none in most namespaces, an index lookup).
func (c *Controller) enqueueFor(obj any) {
	o, ok := controller.ObjectOf(obj)
	if !ok {
		return
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		if in := spread.InjectedOf(pod); in != nil {
			c.Queue.Enqueue(types.NamespacedName{Namespace: pod.Namespace, Name: in.Name})
			return
		}
	}
	all, err := c.spreads.WorkloadSpreads(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ws := range all {
		if concerns(ws, o) {
			c.Queue.Enqueue(types.NamespacedName{Namespace: ws.Namespace, Name: ws.Name})
		}
	}
}

// concerns: o is ws's target, or controlled by an object of the target's
// kind (a pod or a Deployment's ReplicaSet; the sync sorts out the rest).
func concerns(ws *appsv1alpha1.WorkloadSpread, o metav1.Object) bool {
	t := ws.Spec.TargetReference
	if t == nil {
		return false
	}
	if o.GetName() == t.Name {
		return true
	}
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && (spread.RefersTo(t, ref) || spread.MaybeViaReplicaSet(t, ref))
}
