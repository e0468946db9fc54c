// Package controller is the Advanced StatefulSet reconciler
// (apps.kruise.io/v1beta1 StatefulSet): pods with stable ordinal identities
// and claims, created and deleted in order (OrderedReady) or in parallel,
// rolled to a new template from the highest ordinal down to the partition
// by recreation or in place, with lifecycle hooks, revision history and
// status. controllers/statefulset/README.md describes the behaviour.
//
// One sync reads only from informer caches, decides with pure functions
// (plan_scale.go, plan_update.go, plan_ordinals.go, status.go) and writes
// through narrow interfaces (act_scale.go, act_update.go), recording
// expectations so that the next sync does not act on a cache that has not
// caught up with its own writes.
package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "statefulset"

// Controller reconciles Advanced StatefulSets. Beside kit/workload.Base it
// keeps the claim cache (claims are found by name) and the scale
// expectations of pods and claims.
type Controller struct {
	*workload.Base
	client   versioned.Interface
	sets     appslisters.StatefulSetLister
	claims   cache.Indexer
	scaleExp *expectations.Scale[types.NamespacedName]
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods are listed server-side by the label every StatefulSet pod carries
// (statefulset.kubernetes.io/pod-name), so pods of other workloads never
// reach this process's memory, slimmed and indexed by owner UID (and
// orphans, for adoption). Claims are looked up by name: a set's claims
// carry no label of their own.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{client: d.Client}
	base, err := d.NewBase(workload.Spec{
		Name: Name, Owner: Kind, PodLabel: pub.StatefulSetPodNameLabel, Revisions: true, InPlace: true,
		PreDownload: features.PreDownloadImageForInPlaceUpdate,
	}, c.sync)
	if err != nil {
		return nil, err
	}
	c.Base, c.scaleExp = base, base.Scale()
	setInf := d.Informers.Apps().V1beta1().StatefulSets()
	claimInf := d.KubeInformers.Core().V1().PersistentVolumeClaims().Informer()
	// Never cache claims' managedFields, whatever transform the factory
	// was built with.
	if err := claimInf.SetTransform(controller.StripManagedFields); err != nil {
		return nil, fmt.Errorf("set PVC informer transform: %w", err)
	}
	c.sets, c.claims = setInf.Lister(), claimInf.GetIndexer()
	if err := c.addHandlers(setInf.Informer(), claimInf); err != nil {
		return nil, err
	}
	return c, nil
}
