// Package imagepulljob is the ImagePullJob reconciler, the manager side of OpenKruise's image pre-download
// (kruise-manager's imagepulljob controller): it chooses a job's nodes, writes the job's image tag into the spec of
// at most `parallelism` of their NodeImages at a time (the node agent pulls what its NodeImage lists), copies the
// job's pull secrets into the agent's namespace, aggregates the nodes' pull status into the job's status, fails
// the job at activeDeadlineSeconds and deletes it ttlSecondsAfterFinished after completion. The NodeImage
// reconciler (../nodeimage) removes a job's tag from the NodeImages once the job is gone.
package imagepulljob

import (
	"fmt"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/scope"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name in logs and the name of its work queue.
const Name = "imagepulljob"

// maxNodeImageWritesPerSync bounds one sync's NodeImage writes (a job with a large parallelism over thousands of
// nodes): the rest is the next sync's, right after.
const maxNodeImageWritesPerSync = 50

// Controller reconciles ImagePullJobs.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	jobs       appslisters.ImagePullJobLister
	nodeImages appslisters.NodeImageLister
	pods       corelisters.PodLister
	opts       scope.Options
	// written holds the resourceVersions of our job writes, niWritten those of our NodeImage writes: a sync
	// waits until the cache shows them, so that it never counts a node it just wrote as not started (and writes
	// one node more than parallelism allows).
	written, niWritten *expectations.ResourceVersion
	jitter             func(n int32) int32
}

var _ kitapp.Controller = (*Controller)(nil)

// New is NewWithOptions with the default options.
func New(d wiring.Deps) (*Controller, error) { return NewWithOptions(d, scope.DefaultOptions()) }

// NewWithOptions requests the ImagePullJob, NodeImage and pod informers from d's factories, registers the handlers
// and returns the reconciler; nothing starts until the factories are started and Run is called.
func NewWithOptions(d wiring.Deps, o scope.Options) (*Controller, error) {
	c := &Controller{
		opts:      o,
		written:   d.ResourceVersionExpectations(),
		niWritten: d.ResourceVersionExpectations(),
		jitter:    func(n int32) int32 { return rand.Int32N(n) },
	}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	jobInf := d.Informers.Apps().V1beta1().ImagePullJobs()
	niInf := o.NodeImages(d)
	podInf := d.KubeInformers.Core().V1().Pods()
	c.jobs, c.nodeImages, c.pods = jobInf.Lister(), appslisters.NewNodeImageLister(niInf.GetIndexer()), podInf.Lister()
	c.WaitFor(jobInf.Informer().HasSynced, niInf.HasSynced, podInf.Informer().HasSynced)
	if err := c.addHandlers(jobInf.Informer(), niInf, podInf.Informer()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}
