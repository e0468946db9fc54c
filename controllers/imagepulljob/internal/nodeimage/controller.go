// Package nodeimage is the NodeImage reconciler, the manager side of OpenKruise's NodeImage (kruise-manager's
// nodeimage controller): one NodeImage per Node, named after it, created once the node has been Ready for
// --nodeimage-creation-delay and deleted when the node goes; it keeps the node's labels on it (ImagePullJob node
// selectors match them), removes the tags whose ImagePullJobs are gone or whose TTL after the pull passed, and fails
// tags the node's agent never answers or that outlive their deadline. The node agent pulls what the spec lists.
package nodeimage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/scope"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the reconciler's name in logs and the name of its work queue.
const Name = "nodeimage"

// jobUIDIndex indexes NodeImages by the UIDs of the ImagePullJobs their tags name.
const jobUIDIndex = "imagePullJobUID"

// Controller reconciles NodeImages; its keys are node names.
type Controller struct {
	// Core is the queue and loop (and Name and Run), the clientsets, the clock and the recorder.
	wiring.Core[types.NamespacedName]
	nodes      corelisters.NodeLister
	nodeImages appslisters.NodeImageLister
	niIndex    cache.Indexer
	jobs       appslisters.ImagePullJobLister
	opts       scope.Options
	namespace  string // the jobs' namespace when the caches are limited to one (--namespace), else ""
	written    *expectations.ResourceVersion
}

var _ kitapp.Controller = (*Controller)(nil)

// New is NewWithOptions with the default options.
func New(d wiring.Deps) (*Controller, error) { return NewWithOptions(d, scope.DefaultOptions()) }

// NewWithOptions requests the Node, NodeImage and ImagePullJob informers from d's factories, registers the
// handlers and returns the reconciler; nothing starts until the factories are started and Run is called.
func NewWithOptions(d wiring.Deps, o scope.Options) (*Controller, error) {
	c := &Controller{opts: o, namespace: d.Namespace, written: d.ResourceVersionExpectations()}
	var err error
	if c.Core, err = wiring.NewCore(d, Name, c.sync); err != nil {
		return nil, err
	}
	nodeInf := o.Nodes(d)
	niInf := o.NodeImages(d)
	jobInf := d.Informers.Apps().V1beta1().ImagePullJobs()
	if err := niInf.AddIndexers(cache.Indexers{jobUIDIndex: indexByJobUID}); err != nil {
		return nil, fmt.Errorf("%s: add index: %w", Name, err)
	}
	c.nodes, c.jobs = corelisters.NewNodeLister(nodeInf.GetIndexer()), jobInf.Lister()
	c.nodeImages, c.niIndex = appslisters.NewNodeImageLister(niInf.GetIndexer()), niInf.GetIndexer()
	c.WaitFor(nodeInf.HasSynced, niInf.HasSynced, jobInf.Informer().HasSynced)
	if err := c.addHandlers(nodeInf, niInf, jobInf.Informer()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}

func indexByJobUID(obj any) ([]string, error) {
	ni, ok := obj.(*appsv1beta1.NodeImage)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			for _, r := range t.OwnerReferences {
				out = append(out, string(r.UID))
			}
		}
	}
	return out, nil
}
