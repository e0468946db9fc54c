// Package controllertest starts the Advanced DaemonSet reconciler in-process
// against the control plane of kit/testenv, the way the binary would run it
// but with informers limited to one test namespace. The integration tests of
// this module (placement, rolling update, parity with kube-controller-manager,
// crash safety) share it.
package controllertest

import (
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/app"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Options adjust a reconciler started by Start. The zero value is the
// binary's defaults with 2 workers.
type Options struct {
	// Gates overrides feature gates (only the binary's gates are accepted).
	Gates map[featuregate.Feature]bool
	// Workers defaults to 2.
	Workers int
	// ExpectationTimeout: 0 is the binary's default.
	ExpectationTimeout time.Duration
}

// Running is a started reconciler.
type Running struct {
	Controller *controller.Controller
	// Stop cancels the reconciler (aborting its in-flight requests, as a
	// killed process would), waits until it has returned and stops its
	// informers. It is also called at the end of the test; only the first
	// call has an effect.
	Stop func()
}

// Start runs the DaemonSet reconciler for namespace ns: pods, DaemonSets
// and revisions of ns only (nodes are cluster-scoped: all of them).
func Start(t testing.TB, env *testenv.Env, ns string, o Options) Running {
	t.Helper()
	scheme, err := wiring.NewScheme()
	if err != nil {
		t.Fatalf("scheme: %v", err)
	}
	gate := features.MustNewGate(app.Gates()...)
	for g, v := range o.Gates {
		if err := gate.SetFromMap(map[string]bool{string(g): v}); err != nil {
			t.Fatalf("gate %s: %v", g, err)
		}
	}
	if _, err := features.Resolve(gate); err != nil { // as the binary does
		t.Fatalf("resolve gates: %v", err)
	}
	client := versioned.NewForConfigOrDie(env.Config)
	d := controller.Deps{
		Kube:               env.Kube,
		Client:             client,
		KubeInformers:      informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns), informers.WithTransform(kitcontroller.StripManagedFields)),
		Informers:          flotillainformers.NewSharedInformerFactoryWithOptions(client, 0, flotillainformers.WithNamespace(ns)),
		Namespace:          ns,
		Gates:              gate,
		Clock:              clock.RealClock{},
		Recorder:           testenv.EventRecorder(t, env.Kube, ns, "daemonset-test", scheme),
		QueueOptions:       kitcontroller.DefaultQueueOptions(),
		ExpectationTimeout: o.ExpectationTimeout,
	}
	c, err := controller.New(d)
	if err != nil {
		t.Fatalf("new DaemonSet reconciler: %v", err)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 2
	}
	stop := testenv.StartController(t, c, workers, d.KubeInformers, d.Informers)
	return Running{Controller: c, Stop: stop}
}
