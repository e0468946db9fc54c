// Package broadcastjob is the BroadcastJob reconciler: it runs one pod of spec.template on every eligible node
// (the nodes the pod fits, as OpenKruise checks them), within spec.parallelism, never replaces a failed pod,
// deletes pods whose node no longer fits them, applies the completion and failure policies, and reports counters
// and conditions.
// See the BroadcastJob section of controllers/cronjob/README.md for the behaviour in full.
package broadcastjob

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/wiring"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Name is the reconciler's name: queue name, log key, event source.
const Name = "broadcastjob"

// ExpectationTTL bounds how long a created pod that never shows up in the cache blocks its node.
const ExpectationTTL = 2 * time.Minute

// Controller reconciles BroadcastJobs: the workload skeleton (kit/workload)
// and what only BroadcastJob has.
type Controller struct {
	*workload.Base
	client  versioned.Interface
	jobs    appslisters.BroadcastJobLister
	nodes   corelisters.NodeLister
	creates *expectations.Node[types.NamespacedName]
}

var _ kitapp.Controller = (*Controller)(nil)

// New requests the BroadcastJob, pod and node informers from d's factories, registers the event handlers and
// returns the reconciler. Nothing is started.
//
// Only pods carrying the broadcastjob-controller-uid label are listed and cached (server-side label selector),
// slimmed (keeping what decides whether a pod fits its node, and restart counts) and indexed by owner UID. If another reconciler registered
// the factory's Pod informer first, that one is used as is (a superset) and only the index is added.
func New(d wiring.Deps) (*Controller, error) {
	c := &Controller{client: d.Client}
	wd := d.Workload()
	wd.ExpectationTimeout = ExpectationTTL
	base, err := workload.New(wd, workload.Spec{
		Name: Name, Owner: jobOwner, PodLabel: LabelJobUID, KeepPod: workload.Keeps(workload.KeepScheduling, workload.KeepRestarts),
	}, c.sync)
	if err != nil {
		return nil, err
	}
	c.Base, c.creates = base, base.NodeCreates()
	jobInf := d.Informers.Apps().V1alpha1().BroadcastJobs()
	nodeInf := d.KubeInformers.Core().V1().Nodes()
	c.jobs, c.nodes = jobInf.Lister(), nodeInf.Lister()
	return c, errors.Join(
		c.Watch(jobInf.Informer(), c.OwnerHandler(nil), "BroadcastJobs"),
		c.Watch(c.PodInformer, c.podHandler(), "pods"),
		c.Watch(nodeInf.Informer(), c.nodeHandler(), "nodes"),
	)
}
