package webhook

import (
	"k8s.io/client-go/tools/cache"

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
	inf := cl.ReplicaInformers(env).Apps().V1alpha1().PersistentPodStates()
	if err := topology.AddStateIndex(inf.Informer()); err != nil {
		return err
	}
	if err := kitwebhook.Serve(env, opts, Refs(), (&Handlers{States: inf.Informer().GetIndexer()}).Register); err != nil {
		return err
	}

	ref := Refs()[0]
	scope := NewPodScopeSyncer(cl.Kube, cl.Client, ref, inf.Lister(), inf.Informer().HasSynced, env.Clock)
	return kitwebhook.RunScopeSyncers(env, cl.Kube, inf.Informer(), TriggerOnChange, []kitwebhook.ConfigRef{ref}, scope)
}

// TriggerOnChange calls trigger on every PersistentPodState add, delete and
// change (records move the scope; a resync does not).
func TriggerOnChange(trigger func()) cache.ResourceEventHandler {
	return controller.OnChange(func(any) { trigger() })
}
