// Package app wires the imagepulljob-controller binary: one process runs the NodeImage and the ImagePullJob
// reconcilers over one set of informers. It exists so that cmd/imagepulljob-controller/main.go stays one line and
// tests can build the Binary without a process.
package app

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/imagepulljob"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/nodeimage"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/scope"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "imagepulljob-controller"

// Gates are the feature gates imagepulljob-controller accepts in --feature-gates.
func Gates() []featuregate.Feature { return Binary().Gates }

// Binary describes imagepulljob-controller to the kit/app shell. It runs the reconcilers only with KruiseDaemon
// on, as OpenKruise adds its NodeImage and ImagePullJob controllers only then (a pull needs a node agent). The gate
// keeps its default (off); Flotilla's overlay and `make run` pass KruiseDaemon=true.
func Binary() kitapp.Binary {
	o := scope.DefaultOptions()
	var nodeSelector string
	return wiring.Reconcilers(wiring.ReconcilerBinary{
		Name:  Name,
		Gates: []featuregate.Feature{features.KruiseDaemon},
		AddFlags: func(fs *pflag.FlagSet) {
			addFlags(fs, &o)
			fs.StringVar(&nodeSelector, "node-selector", "",
				"Label selector narrowing the nodes (and their NodeImages) this controller handles; empty: all. For tests that share a cluster.")
		},
		Off: wiring.OffUnless(features.KruiseDaemon),
		Reconcilers: func(env *kitapp.Env, cl *wiring.Clients) error {
			sel, err := labels.Parse(nodeSelector)
			if err != nil {
				return fmt.Errorf("--node-selector: %w", err)
			}
			o.NodeSelector = sel
			return addReconcilers(env, cl.Deps(env), o)
		},
	})
}

func addFlags(fs *pflag.FlagSet, o *scope.Options) {
	fs.StringVar(&o.AgentNamespace, "agent-namespace", o.AgentNamespace,
		"Namespace of the node agent: ImagePullJob pull secrets are copied there for it to read.")
	fs.DurationVar(&o.NodeImageCreationDelay, "nodeimage-creation-delay", o.NodeImageCreationDelay,
		"How long after a node became Ready its NodeImage is created.")
}

// addReconcilers registers the NodeImage and the ImagePullJob reconcilers with options o.
func addReconcilers(env *kitapp.Env, d wiring.Deps, o scope.Options) error {
	if err := wiring.AddReconciler(env, "NodeImage reconciler", func(d wiring.Deps) (*nodeimage.Controller, error) {
		return nodeimage.NewWithOptions(d, o)
	}, d); err != nil {
		return err
	}
	return wiring.AddReconciler(env, "ImagePullJob reconciler", func(d wiring.Deps) (*imagepulljob.Controller, error) {
		return imagepulljob.NewWithOptions(d, o)
	}, d)
}
