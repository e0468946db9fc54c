package webhook

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

	c, err := kitwebhook.New(opts, env.KubeClient, env.Metrics, env.Clock, Refs()...)
	if err != nil {
		return err
	}
	h := &Handlers{Spreads: wsInf.Lister(), Client: cl.Client, Kube: cl.Kube, Clock: env.Clock,
		Targets: workload.Client{Kube: cl.Kube, Kruise: cl.Client}}
	h.Register(c.Server)
	if _, err := wsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if o, ok := controller.ObjectOf(obj); ok {
			h.Forget(o.GetUID())
		}
	}}); err != nil {
		return fmt.Errorf("workloadspread forget handler: %w", err)
	}
	env.AddReplicaComponent(c.ReplicaComponent())

	syncers := NewScopeSyncers(cl.Kube, cl.Client, wsInf.Lister(), wsInf.Informer().HasSynced, ConfigName, env.Clock)
	var triggers []func()
	for _, s := range syncers {
		if _, err := wsInf.Informer().AddEventHandler(kitwebhook.TriggerOnSpecChange(s.Trigger)); err != nil {
			return fmt.Errorf("workloadspread scope handler: %w", err)
		}
		triggers = append(triggers, s.Trigger)
		env.AddReplicaComponent(s.ReplicaComponent())
		env.AddController(s)
	}
	for _, ref := range Refs() {
		watch, err := kitwebhook.WatchConfig(cl.Kube, ref, triggers...)
		if err != nil {
			return err
		}
		env.AddReplicaInformerFactory(watch)
	}
	return nil
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
	compute := func(which int) func() (kitwebhook.Scope, error) {
		return func() (kitwebhook.Scope, error) {
			if !synced() {
				return kitwebhook.Scope{}, fmt.Errorf("workloadspread cache not synced yet")
			}
			all, err := lister.List(labels.Everything())
			if err != nil {
				return kitwebhook.Scope{}, err
			}
			create, del, evict := Scopes(all)
			switch which {
			case 1:
				return del, nil
			case 2:
				return evict, nil
			}
			if client != nil {
				create.Applied = func(ctx context.Context) error { return reportInScope(ctx, client, all, clk) }
			}
			return create, nil
		}
	}
	mut := kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: config}
	val := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: config}
	return []*kitwebhook.ScopeSyncer{
		kitwebhook.NewScopeSyncer(kube, mut, PodWebhookName, compute(0)),
		kitwebhook.NewScopeSyncer(kube, val, DeletionWebhookName, compute(1)),
		kitwebhook.NewScopeSyncer(kube, val, EvictionWebhookName, compute(2)),
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
