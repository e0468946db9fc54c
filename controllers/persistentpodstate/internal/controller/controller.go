// Package controller is the PersistentPodState reconciler: it records, for
// each ready pod of the target StatefulSet, its node and the node's values
// of the topology keys (status.podStates), drops the records of pods the
// StatefulSet scaled in (WhenScaled) or of a StatefulSet that is gone,
// reports pods recreated without their recorded topology (the pod webhook
// was not called), and creates, updates and deletes the PersistentPodStates
// StatefulSets ask for through kruise.io/auto-generate-persistent-pod-state —
// as OpenKruise v1.9 does.
package controller

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	ppslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	astslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the controller's name in logs and the name of its work queue.
const Name = "persistentpodstate"

// Key is a work item: a PersistentPodState (Generate empty), or the
// StatefulSet of group Generate whose auto-generated PersistentPodState is
// to be kept (OpenKruise's "generate#..." requests).
type Key struct {
	Namespace, Name string
	Generate        string
}

// Controller reconciles PersistentPodStates.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[Key]
	states   ppslisters.PersistentPodStateLister
	statesIx cache.Indexer
	pods     cache.Indexer
	nodes    corelisters.NodeLister
	sets     appslisters.StatefulSetLister
	asts     astslisters.StatefulSetLister
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers the reconciler needs (pods: only those with
// the StatefulSet pod-name label, which both StatefulSet controllers set),
// registers its handlers and returns it.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	ppsInf := d.Informers.Apps().V1alpha1().PersistentPodStates()
	astsInf := d.Informers.Apps().V1beta1().StatefulSets()
	stsInf := d.KubeInformers.Apps().V1().StatefulSets()
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	podInf := d.KubeInformers.InformerFor(&corev1.Pod{}, func(k kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(k, d.Namespace, resync, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = pub.StatefulSetPodNameLabel })
	})
	if err := podInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("persistentpodstate: pod transform: %w", err)
	}
	if err := podInf.AddIndexers(cache.Indexers{topology.TargetIndex: indexPodByTarget}); err != nil {
		return nil, fmt.Errorf("persistentpodstate: pod index: %w", err)
	}
	if err := topology.AddStateIndex(ppsInf.Informer()); err != nil {
		return nil, err
	}
	c.states, c.statesIx = ppsInf.Lister(), ppsInf.Informer().GetIndexer()
	c.pods, c.nodes = podInf.GetIndexer(), nodeInf.Lister()
	c.sets, c.asts = stsInf.Lister(), astsInf.Lister()
	c.WaitFor(ppsInf.Informer().HasSynced, astsInf.Informer().HasSynced, stsInf.Informer().HasSynced,
		nodeInf.Informer().HasSynced, podInf.HasSynced)
	if err := c.addHandlers(ppsInf.Informer(), podInf, stsInf.Informer(), astsInf.Informer()); err != nil {
		return nil, fmt.Errorf("persistentpodstate: %w", err)
	}
	return c, nil
}

func indexPodByTarget(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if t, ok := topology.OfPod(pod); ok {
		return []string{t.String()}, nil
	}
	return nil, nil
}

// workloadOf reads the target StatefulSet from the caches; nil when it does
// not exist.
func (c *Controller) workloadOf(t topology.Target) (*workload, error) {
	switch t.Group {
	case topology.GroupApps:
		s, err := c.sets.StatefulSets(t.Namespace).Get(t.Name)
		if err != nil {
			return nil, ignoreNotFound(err)
		}
		return appsWorkload(s), nil
	case topology.GroupKruise:
		s, err := c.asts.StatefulSets(t.Namespace).Get(t.Name)
		if err != nil {
			return nil, ignoreNotFound(err)
		}
		w := &workload{meta: &s.ObjectMeta, apiVersion: "apps.kruise.io/v1beta1", replicas: 1, reserved: s.Spec.ReserveOrdinals}
		if s.Spec.Replicas != nil {
			w.replicas = *s.Spec.Replicas
		}
		return w, nil
	}
	return nil, nil
}

func appsWorkload(s *appsv1.StatefulSet) *workload {
	w := &workload{meta: &s.ObjectMeta, apiVersion: "apps/v1", replicas: 1}
	if s.Spec.Replicas != nil {
		w.replicas = *s.Spec.Replicas
	}
	return w
}
