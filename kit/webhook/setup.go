package webhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// Registry is where RunScopeSyncers registers what it runs: a binary's kit/app Env.
type Registry interface {
	AddReplicaComponent(kitapp.ReplicaComponent)
	AddController(kitapp.Controller)
	AddReplicaInformerFactory(kitapp.InformerFactory)
}

// RunScopeSyncers registers syncers with env the way every webhook binary runs them: every replica widens (an
// object is in scope as soon as any replica has seen it) and only the leader narrows. Each syncer runs again when
// inf's objects change as onChange says (onChange(trigger) is the handler calling trigger), and every syncer when
// one of refs' configurations appears or changes: a re-applied manifest resets a scope to its shipped "false",
// restored at once rather than at the next resync.
func RunScopeSyncers(env Registry, kube kubernetes.Interface, inf cache.SharedIndexInformer,
	onChange func(trigger func()) cache.ResourceEventHandler, refs []ConfigRef, syncers ...*ScopeSyncer) error {
	triggers := make([]func(), 0, len(syncers))
	for _, s := range syncers {
		if _, err := inf.AddEventHandler(onChange(s.Trigger)); err != nil {
			return fmt.Errorf("scope handler of %s: %w", s.Webhook, err)
		}
		triggers = append(triggers, s.Trigger)
		env.AddReplicaComponent(s.ReplicaComponent())
		env.AddController(s)
	}
	for _, ref := range refs {
		watch, err := WatchConfig(kube, ref, triggers...)
		if err != nil {
			return err
		}
		env.AddReplicaInformerFactory(watch)
	}
	return nil
}

// Serve builds the admission server of opts, which keeps the caBundle of refs' configurations current, lets
// register add the handlers and runs it on every replica of env's binary. A binary that also converts a CRD builds
// its Component with New instead (ServeConversion comes before ReplicaComponent).
func Serve(env *kitapp.Env, opts Options, refs []ConfigRef, register func(*Server)) error {
	c, err := New(opts, env.KubeClient, env.Metrics, env.Clock, refs...)
	if err != nil {
		return err
	}
	register(c.Server)
	env.AddReplicaComponent(c.ReplicaComponent())
	return nil
}

// ListedScope returns a ScopeSyncer's Compute over a cache of the objects a webhook serves: once the cache synced
// (what names it in the error until then), the scope of everything list returns, computed by scope; when report
// is not nil, the scope's Applied reports those objects (their WebhookInScope condition) once the leader has it in
// the configuration.
func ListedScope[T any](what string, synced func() bool, list func(labels.Selector) ([]T, error),
	scope func([]T) (Scope, error), report func(context.Context, []T) error) func() (Scope, error) {
	return func() (Scope, error) {
		if !synced() {
			return Scope{}, fmt.Errorf("%s cache not synced yet", what)
		}
		all, err := list(labels.Everything())
		if err != nil {
			return Scope{}, err
		}
		s, err := scope(all)
		if err != nil || report == nil {
			return s, err
		}
		s.Applied = func(ctx context.Context) error { return report(ctx, all) }
		return s, nil
	}
}
