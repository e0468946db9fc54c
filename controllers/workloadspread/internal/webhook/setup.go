package webhook

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/controller"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

// Setup registers the webhooks with the shell: the admission server and
// its WorkloadSpread cache run on every replica, so do the widening halves
// of the scope syncers (a new WorkloadSpread is in scope as soon as any
// replica has seen it); only the leader narrows. They react to a change of
// the configurations themselves (a re-applied manifest resets the scope to
// "false").
func Setup(env *kitapp.Env, cl *wiring.Clients, opts kitwebhook.Options) error {
	if opts.Disabled {
		return nil
	}
	wsInf := cl.ReplicaInformers(env).Apps().V1alpha1().WorkloadSpreads()

	h := &Handlers{Spreads: wsInf.Lister(), Client: cl.Client, Kube: cl.Kube, Clock: env.Clock,
		Targets: workload.Client{Kube: cl.Kube, Kruise: cl.Client}}
	if err := kitwebhook.Serve(env, opts, Refs(), h.Register); err != nil {
		return err
	}
	if _, err := wsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if o, ok := controller.ObjectOf(obj); ok {
			h.Forget(o.GetUID())
		}
	}}); err != nil {
		return fmt.Errorf("workloadspread forget handler: %w", err)
	}

	syncers := NewScopeSyncers(cl.Kube, cl.Client, wsInf.Lister(), wsInf.Informer().HasSynced, ConfigName, env.Clock)
	return kitwebhook.RunScopeSyncers(env, cl.Kube, wsInf.Informer(), kitwebhook.TriggerOnSpecChange, Refs(), syncers...)
}

// NewScopeSyncers keep the creation entry (mutating) and the deletion and
// eviction entries (validating) of config scoped to the WorkloadSpreads in
// lister; once the leader has the creation scope in the configuration,
// each WorkloadSpread's WebhookInScope condition is set (client nil: no
// condition).
func NewScopeSyncers(kube kubernetes.Interface, client versioned.Interface, lister appslisters.WorkloadSpreadLister, synced cache.InformerSynced,
	config string, clk clock.PassiveClock) []*kitwebhook.ScopeSyncer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var report func(context.Context, []*appsv1alpha1.WorkloadSpread) error
	if client != nil {
		report = func(ctx context.Context, all []*appsv1alpha1.WorkloadSpread) error {
			return reportInScope(ctx, client, all, clk)
		}
	}
	// which picks one of Scopes' three: creation, deletion, eviction.
	compute := func(which int, report func(context.Context, []*appsv1alpha1.WorkloadSpread) error) func() (kitwebhook.Scope, error) {
		return kitwebhook.ListedScope("workloadspread", synced, lister.List, func(all []*appsv1alpha1.WorkloadSpread) (kitwebhook.Scope, error) {
			create, del, evict := Scopes(all)
			return [...]kitwebhook.Scope{create, del, evict}[which], nil
		}, report)
	}
	mut := kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: config}
	val := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: config}
	return []*kitwebhook.ScopeSyncer{
		kitwebhook.NewScopeSyncer(kube, mut, PodWebhookName, compute(0, report)),
		kitwebhook.NewScopeSyncer(kube, val, DeletionWebhookName, compute(1, nil)),
		kitwebhook.NewScopeSyncer(kube, val, EvictionWebhookName, compute(2, nil)),
	}
}

// reportInScope sets WebhookInScope True on each WorkloadSpread whose
// condition says otherwise (a conflict with the webhook's or the
// reconciler's status write retries the sync).
func reportInScope(ctx context.Context, client versioned.Interface, all []*appsv1alpha1.WorkloadSpread, clk clock.PassiveClock) error {
	return kitwebhook.ReportInScope(ctx, all,
		func(ws *appsv1alpha1.WorkloadSpread) []metav1.Condition { return ws.Status.Conditions },
		func(*appsv1alpha1.WorkloadSpread) (bool, string) {
			return true, "pods of its workload created from now on are sent to the subset webhook"
		},
		func(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, conds []metav1.Condition) error {
			upd := ws.DeepCopy()
			upd.Status.Conditions = conds
			_, err := client.AppsV1alpha1().WorkloadSpreads(ws.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
			return err
		}, clk.Now())
}
