package webhook

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
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
	pubInf := cl.ReplicaInformers(env).Policy().V1alpha1().PodUnavailableBudgets()

	finder, err := workload.New(env.RESTConfig)
	if err != nil {
		return err
	}
	if err := kitwebhook.Serve(env, opts, Refs(), func(s *kitwebhook.Server) {
		(&Guard{Pubs: pubInf.Lister(), Client: cl.Client, Kube: cl.Kube, Gates: env.Gates, Clock: env.Clock, Recorder: cl.Recorder,
			Finder: finder}).Register(s)
		(&Validator{Client: cl.Client}).Register(s)
	}); err != nil {
		return err
	}

	syncers := NewScopeSyncers(cl.Kube, cl.Client, pubInf.Lister(), pubInf.Informer().HasSynced, ConfigName)
	return kitwebhook.RunScopeSyncers(env, cl.Kube, pubInf.Informer(), TriggerOnChange,
		[]kitwebhook.ConfigRef{{Kind: kitwebhook.Validating, Name: ConfigName}}, syncers...)
}

// NewScopeSyncers keep the pod and the eviction entries of config scoped
// to the budgets in lister; once the leader has the pod entry's scope in
// the configuration, each budget's WebhookInScope condition is set
// (client nil: no condition).
func NewScopeSyncers(kube kubernetes.Interface, client versioned.Interface, lister policylisters.PodUnavailableBudgetLister, synced cache.InformerSynced, config string) []*kitwebhook.ScopeSyncer {
	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: config}
	var report func(context.Context, []*policyv1alpha1.PodUnavailableBudget) error
	if client != nil {
		report = func(ctx context.Context, all []*policyv1alpha1.PodUnavailableBudget) error {
			return reportInScope(ctx, client, all)
		}
	}
	pod := func(all []*policyv1alpha1.PodUnavailableBudget) (kitwebhook.Scope, error) {
		s, _ := Scopes(all)
		return s, nil
	}
	eviction := func(all []*policyv1alpha1.PodUnavailableBudget) (kitwebhook.Scope, error) {
		_, s := Scopes(all)
		return s, nil
	}
	return []*kitwebhook.ScopeSyncer{
		kitwebhook.NewScopeSyncer(kube, ref, PodWebhookName, kitwebhook.ListedScope("pub", synced, lister.List, pod, report)),
		kitwebhook.NewScopeSyncer(kube, ref, EvictionWebhookName, kitwebhook.ListedScope("pub", synced, lister.List, eviction, nil)),
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
