// Package scope holds what both reconcilers of imagepulljob-controller share: their options and the Node and
// NodeImage informers, which a node label selector may narrow (an integration test narrows them to its own nodes,
// so that it never creates or deletes NodeImages of the shared cluster's other nodes).
package scope

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appsinformers "github.com/flotilla-dev/flotilla/client/informers/externalversions/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// DefaultAgentNamespace is the node agent's namespace (probe-agent's, deploy/components/probe).
const DefaultAgentNamespace = "flotilla-node"

// Options are imagepulljob-controller's own settings.
type Options struct {
	// AgentNamespace is where pull secrets are copied for the node agent to read.
	AgentNamespace string
	// NodeImageCreationDelay is how long after a node became Ready its NodeImage is created (OpenKruise's
	// --nodeimage-creation-delay, 30 s).
	NodeImageCreationDelay time.Duration
	// NodeSelector narrows the nodes (and NodeImages, whose labels are their nodes') the controller handles; nil
	// or empty: all.
	NodeSelector labels.Selector
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{AgentNamespace: DefaultAgentNamespace, NodeImageCreationDelay: 30 * time.Second}
}

// ListOptions are the options of a live list of the nodes (or NodeImages) this controller handles.
func (o Options) ListOptions() metav1.ListOptions {
	var lo metav1.ListOptions
	o.tweak(&lo)
	return lo
}

func (o Options) tweak(lo *metav1.ListOptions) {
	if o.NodeSelector != nil && !o.NodeSelector.Empty() {
		lo.LabelSelector = o.NodeSelector.String()
	}
}

// NodeImages returns the (shared) NodeImage informer of d's factory, narrowed by o.NodeSelector.
func (o Options) NodeImages(d wiring.Deps) cache.SharedIndexInformer {
	return d.Informers.InformerFor(&appsv1beta1.NodeImage{}, func(c versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
		inf := appsinformers.NewFilteredNodeImageInformer(c, resync, cache.Indexers{}, o.tweak)
		_ = inf.SetTransform(controller.StripManagedFields)
		return inf
	})
}

// Nodes returns the (shared) Node informer of d's factory, narrowed by o.NodeSelector.
func (o Options) Nodes(d wiring.Deps) cache.SharedIndexInformer {
	return d.KubeInformers.InformerFor(&corev1.Node{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		inf := coreinformers.NewFilteredNodeInformer(c, resync, cache.Indexers{}, o.tweak)
		_ = inf.SetTransform(controller.StripManagedFields)
		return inf
	})
}
