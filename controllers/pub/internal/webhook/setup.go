package webhook

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Setup registers the guard and the budget validation with the shell: the
// admission server and its budget cache run on every replica; so do the
// widening halves of the two scope syncers (a new budget is in scope as
// soon as any replica has seen it), while only the leader narrows. Both
// react to a change of the configuration itself (a re-applied manifest
// resets the scope to "false").
func Setup(env *kitapp.Env, cl *wiring.Clients, opts kitwebhook.Options) error {
	if opts.Disabled {
		return nil
	}
	fopts := []flotillainformers.SharedInformerOption{flotillainformers.WithTransform(controller.StripManagedFields)}
	if env.Options.Namespace != "" {
		fopts = append(fopts, flotillainformers.WithNamespace(env.Options.Namespace))
	}
	f := flotillainformers.NewSharedInformerFactoryWithOptions(cl.Client, 0, fopts...)
	pubInf := f.Policy().V1alpha1().PodUnavailableBudgets()
	env.AddReplicaInformerFactory(f)

	c, err := kitwebhook.New(opts, env.KubeClient, env.Metrics, env.Clock, Refs()...)
	if err != nil {
		return err
	}
	finder, err := workload.New(env.RESTConfig)
	if err != nil {
		return err
	}
	(&Guard{Pubs: pubInf.Lister(), Client: cl.Client, Kube: cl.Kube, Gates: env.Gates, Clock: env.Clock, Recorder: cl.Recorder,
		Finder: finder}).Register(c.Server)
	(&Validator{Client: cl.Client}).Register(c.Server)
	env.AddReplicaComponent(c.ReplicaComponent())

	syncers := NewScopeSyncers(cl.Kube, cl.Client, pubInf.Lister(), pubInf.Informer().HasSynced, ConfigName)
	var triggers []func()
	for _, s := range syncers {
		if _, err := pubInf.Informer().AddEventHandler(TriggerOnChange(s.Trigger)); err != nil {
			return fmt.Errorf("pub scope handler: %w", err)
		}
		triggers = append(triggers, s.Trigger)
		env.AddReplicaComponent(s.ReplicaComponent()) // every replica widens
		env.AddController(s)                          // the leader narrows
	}
	watch, err := kitwebhook.WatchConfig(cl.Kube, kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: ConfigName}, triggers...)
	if err != nil {
		return err
	}
	env.AddReplicaInformerFactory(watch)
	return nil
}

// NewScopeSyncers keep the pod and the eviction entries of config scoped
// to the budgets in lister; once the leader has the pod entry's scope in
// the configuration, each budget's WebhookInScope condition is set
// (client nil: no condition).
func NewScopeSyncers(kube kubernetes.Interface, client versioned.Interface, lister policylisters.PodUnavailableBudgetLister, synced cache.InformerSynced, config string) []*kitwebhook.ScopeSyncer {
	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: config}
	compute := func(evict bool) func() (kitwebhook.Scope, error) {
		return func() (kitwebhook.Scope, error) {
			if !synced() {
				return kitwebhook.Scope{}, fmt.Errorf("pub cache not synced yet")
			}
			all, err := lister.List(labels.Everything())
			if err != nil {
				return kitwebhook.Scope{}, err
			}
			pod, eviction := Scopes(all)
			if evict {
				return eviction, nil
			}
			if client != nil {
				pod.Applied = func(ctx context.Context) error { return reportInScope(ctx, client, all) }
			}
			return pod, nil
		}
	}
	return []*kitwebhook.ScopeSyncer{
		kitwebhook.NewScopeSyncer(kube, ref, PodWebhookName, compute(false)),
		kitwebhook.NewScopeSyncer(kube, ref, EvictionWebhookName, compute(true)),
	}
}

// reportInScope sets WebhookInScope True on each budget (not being
// deleted) whose condition says otherwise: its namespace is in the guard's
// scope. The write is the cached status with the condition, carrying the
// cached resourceVersion, like the guard's and the controller's (a
// conflict retries the sync on a fresher cache); both keep the condition.
func reportInScope(ctx context.Context, client versioned.Interface, pubs []*policyv1alpha1.PodUnavailableBudget) error {
	return kitwebhook.ReportInScope(ctx, pubs,
		func(p *policyv1alpha1.PodUnavailableBudget) []metav1.Condition { return p.Status.Conditions },
		func(*policyv1alpha1.PodUnavailableBudget) (bool, string) {
			return true, "deletions, evictions and updates of the pods it covers are sent to the guard"
		},
		func(ctx context.Context, p *policyv1alpha1.PodUnavailableBudget, conds []metav1.Condition) error {
			upd := p.DeepCopy()
			upd.Status.Conditions = conds
			_, err := client.PolicyV1alpha1().PodUnavailableBudgets(p.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
			return err
		}, time.Now())
}

// TriggerOnChange calls trigger when a budget is added, deleted, starts
// terminating (the scope is the set of their namespaces) or changes spec.
func TriggerOnChange(trigger func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { trigger() },
		UpdateFunc: func(o, n any) {
			oo, ok1 := o.(*policyv1alpha1.PodUnavailableBudget)
			no, ok2 := n.(*policyv1alpha1.PodUnavailableBudget)
			// A new generation: its WebhookInScope condition follows.
			if !ok1 || !ok2 || (oo.DeletionTimestamp == nil) != (no.DeletionTimestamp == nil) || oo.Generation != no.Generation {
				trigger()
			}
		},
		DeleteFunc: func(any) { trigger() },
	}
}
