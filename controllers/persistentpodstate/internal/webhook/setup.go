package webhook

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Setup registers the pod webhook with the shell: the admission server and
// its PersistentPodState cache run on every replica, and so does the
// widening half of the scope syncer (a new record is in the match condition
// as soon as any replica has seen it); only the leader narrows. Both react
// to a change of the configuration itself (a re-applied manifest resets the
// condition to "false").
func Setup(env *kitapp.Env, cl *wiring.Clients, opts kitwebhook.Options) error {
	if opts.Disabled {
		return nil
	}
	// --namespace narrows the webhook's PersistentPodStates as it does the reconciler's informers.
	f := flotillainformers.NewSharedInformerFactoryWithOptions(cl.Client, 0, flotillainformers.WithTransform(controller.StripManagedFields),
		flotillainformers.WithNamespace(env.Options.Namespace))
	inf := f.Apps().V1alpha1().PersistentPodStates()
	if err := topology.AddStateIndex(inf.Informer()); err != nil {
		return err
	}
	env.AddReplicaInformerFactory(f)
	c, err := kitwebhook.New(opts, env.KubeClient, env.Metrics, env.Clock, Refs()...)
	if err != nil {
		return err
	}
	(&Handlers{States: inf.Informer().GetIndexer()}).Register(c.Server)
	env.AddReplicaComponent(c.ReplicaComponent())

	ref := Refs()[0]
	scope := NewPodScopeSyncer(cl.Kube, cl.Client, ref, inf.Lister(), inf.Informer().HasSynced, env.Clock)
	if _, err := inf.Informer().AddEventHandler(TriggerOnChange(scope.Trigger)); err != nil {
		return fmt.Errorf("persistentpodstate scope handler: %w", err)
	}
	watch, err := kitwebhook.WatchConfig(cl.Kube, ref, scope.Trigger)
	if err != nil {
		return err
	}
	env.AddReplicaInformerFactory(watch)
	env.AddReplicaComponent(scope.ReplicaComponent()) // every replica widens
	env.AddController(scope)                          // the leader narrows
	return nil
}

// TriggerOnChange calls trigger on every PersistentPodState add, delete and
// change (records move the scope; a resync does not).
func TriggerOnChange(trigger func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { trigger() },
		UpdateFunc: func(o, n any) {
			oo, ok1 := controller.ObjectOf(o)
			no, ok2 := controller.ObjectOf(n)
			if !ok1 || !ok2 || oo.GetResourceVersion() != no.GetResourceVersion() {
				trigger()
			}
		},
		DeleteFunc: func(any) { trigger() },
	}
}
