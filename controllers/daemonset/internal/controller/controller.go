// Package controller is the Advanced DaemonSet reconciler
// (apps.kruise.io/v1alpha1 DaemonSet): one pod per eligible node, placed by
// kube-scheduler through a required node affinity on the node's name, rolled
// to a new template by recreation (maxUnavailable or maxSurge) or in place,
// within a partition and a node selector, with a preDelete lifecycle hook,
// ControllerRevision history and upstream's status counters.
// controllers/daemonset/README.md describes the behaviour.
//
// One sync reads only from informer caches, decides with pure functions
// (plan_manage.go, plan_update.go, plan_budgets.go, plan_inplace.go,
// status.go) and writes through narrow interfaces (act.go, act_inplace.go),
// recording expectations so that the next sync does not act on a cache that
// has not caught up with its own writes.
package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "daemonset"

// Failed pods are deleted with a per-node back-off (upstream's values), so a
// kubelet that keeps rejecting the pod does not meet a hot loop.
const (
	failedPodsBackoffBase = time.Second
	failedPodsBackoffMax  = 15 * time.Minute
)

// Controller reconciles Advanced DaemonSets. Beside kit/workload.Base it
// keeps nodes and their cached eligibility verdicts, and what placing one
// pod per node needs: deletion and per-node creation expectations, the
// slow-start memory, a back-off for failed pods and the rejected templates.
type Controller struct {
	*workload.Base
	client versioned.Interface
	sets   appslisters.DaemonSetLister
	nodes  corelisters.NodeLister
	// deletes: pod deletions not yet seen; creates: per node, pods created
	// and not yet seen (one lost event delays one node, not the set).
	deletes *expectations.Scale[types.NamespacedName]
	creates *expectations.Node[types.NamespacedName]
	// batches: where each DaemonSet's next creation slow start begins.
	batches   controller.BatchMemory[types.NamespacedName]
	placement *placementCache
	backoff   *flowcontrol.Backoff
	rejected  *rejections
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the informers it needs from d's factories, registers the
// event handlers and returns the reconciler. Nothing is started.
//
// Pods are listed server-side by the label every DaemonSet pod carries
// (controller-revision-hash), so most pods of other workloads never reach
// this process's memory, slimmed (with the node a pod is pinned to) and
// indexed by owner UID. Nodes are cached without their image lists.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{
		client: d.Client, placement: newPlacementCache(), rejected: &rejections{byUID: map[types.UID]rejection{}},
		backoff: flowcontrol.NewFakeBackOff(failedPodsBackoffBase, failedPodsBackoffMax, d.Clock), // "Fake" only means "with this clock"
	}
	base, err := d.NewBase(workload.Spec{
		Name: Name, Owner: Kind, PodLabel: pub.ControllerRevisionHashLabelKey, KeepPod: workload.KeepPinnedNode,
		Revisions: true, InPlace: true, StatusInterval: statusInterval,
		Gates:       []featuregate.Feature{features.PreDownloadImageForDaemonSetUpdate, features.DaemonSetPruneIneligibleNodes},
		PreDownload: features.PreDownloadImageForDaemonSetUpdate,
	}, c.sync)
	if err != nil {
		return nil, err
	}
	c.Base, c.deletes, c.creates = base, base.Scale(), base.NodeCreates()
	// Orphan revisions are adopted like orphan pods (adopt.go).
	if _, exists := c.RevisionInformer.GetIndexer().GetIndexers()[controller.OrphanIndex]; !exists {
		if err := c.RevisionInformer.AddIndexers(cache.Indexers{controller.OrphanIndex: controller.IndexOrphanByNamespace}); err != nil {
			return nil, fmt.Errorf("index orphan revisions: %w", err)
		}
	}
	setInf := d.Informers.Apps().V1alpha1().DaemonSets()
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	if err := nodeInf.Informer().SetTransform(stripNode); err != nil {
		return nil, fmt.Errorf("set node informer transform: %w", err)
	}
	c.sets, c.nodes = setInf.Lister(), nodeInf.Lister()
	if err := c.addHandlers(setInf.Informer(), nodeInf.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// EligibilityEvaluations is how many (DaemonSet generation, node) verdicts
// were computed since start: with the placement cache it grows with nodes
// and template changes, not with syncs (OpenKruise #1011).
func (c *Controller) EligibilityEvaluations() uint64 { return c.placement.evaluations.Load() }

// stripNode keeps what placement reads out of the cache's copy of a node:
// no managedFields and no image list (the largest part of a node's status).
func stripNode(obj any) (any, error) {
	obj, err := controller.StripManagedFields(obj)
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return obj, err
}
