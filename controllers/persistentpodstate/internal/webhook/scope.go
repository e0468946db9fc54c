package webhook

import (
	"context"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	ppslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// ScopeCondition is the match condition the controller keeps on the pod
// webhook.
const ScopeCondition = kitwebhook.OwnedPrefix + "persistentpodstate-records"

// maxScopeLen bounds the expression: beyond it the pod names are dropped
// (every pod of the targeted StatefulSets is sent), then the StatefulSet
// names (every pod of a namespace with records), then the condition is
// "true" — wider, never narrower.
const maxScopeLen = 32 << 10

// PodScope is the pod webhook's scope: true for a pod that some
// PersistentPodState would give constraints to — created in its namespace,
// controlled by its target StatefulSet, under a name it recorded with
// topology values. No such record: "false", the API server never calls.
func PodScope(states []*appsv1alpha1.PersistentPodState) kitwebhook.Scope {
	var full, owners, nss []string
	for _, pps := range states {
		t, names, ok := Served(pps)
		if !ok || len(names) == 0 {
			continue
		}
		ns := kitwebhook.NamespaceIn(t.Namespace)
		owner := kitwebhook.AllOf(ns, controllerIs(t))
		full = append(full, kitwebhook.AllOf(owner, "has(object.metadata.name) && object.metadata.name in "+quoteList(names)))
		owners = append(owners, owner)
		nss = append(nss, ns)
	}
	expr := kitwebhook.AnyOf(full...)
	for _, wider := range [][]string{owners, nss} {
		if len(expr) > maxScopeLen {
			expr = kitwebhook.AnyOf(wider...)
		}
	}
	if len(expr) > maxScopeLen {
		expr = kitwebhook.Always
	}
	return kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: ScopeCondition, Expression: expr}}}
}

// Served returns the target of pps and the pod names it would constrain
// (sorted); false for one the webhook does not serve (being deleted,
// unsupported target).
func Served(pps *appsv1alpha1.PersistentPodState) (topology.Target, []string, bool) {
	t, ok := topology.OfPersistentPodState(pps)
	if !ok || pps.DeletionTimestamp != nil {
		return topology.Target{}, nil, false
	}
	var names []string
	for name, st := range pps.Status.PodStates {
		if len(st.NodeTopologyLabels) > 0 && !topology.ConstraintsFor(&pps.Spec, st).Empty() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return t, names, true
}

// controllerIs is true for a pod whose controllerRef is t's StatefulSet.
func controllerIs(t topology.Target) string {
	return "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && " +
		"r.kind == " + strconv.Quote(topology.KindStatefulSet) + " && r.name == " + strconv.Quote(t.Name) +
		" && r.apiVersion.startsWith(" + strconv.Quote(t.Group+"/") + "))"
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// NewPodScopeSyncer keeps the pod entry of ref scoped to the records of the
// PersistentPodStates in states and, once the leader has the scope in the
// configuration, sets their WebhookInScope condition. client nil: no
// condition.
func NewPodScopeSyncer(kube kubernetes.Interface, client versioned.Interface, ref kitwebhook.ConfigRef,
	states ppslisters.PersistentPodStateLister, synced func() bool, clk clock.PassiveClock) *kitwebhook.ScopeSyncer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var report func(context.Context, []*appsv1alpha1.PersistentPodState) error
	if client != nil {
		report = func(ctx context.Context, all []*appsv1alpha1.PersistentPodState) error {
			return reportInScope(ctx, client, all, clk)
		}
	}
	scope := func(all []*appsv1alpha1.PersistentPodState) (kitwebhook.Scope, error) { return PodScope(all), nil }
	return kitwebhook.NewScopeSyncer(kube, ref, PodWebhookName, kitwebhook.ListedScope("persistentpodstate", synced, states.List, scope, report))
}

// reportInScope writes the WebhookInScope condition of each
// PersistentPodState whose condition differs.
func reportInScope(ctx context.Context, client versioned.Interface, states []*appsv1alpha1.PersistentPodState, clk clock.PassiveClock) error {
	return kitwebhook.ReportInScope(ctx, states,
		func(p *appsv1alpha1.PersistentPodState) []metav1.Condition { return p.Status.Conditions },
		func(p *appsv1alpha1.PersistentPodState) (bool, string) {
			if _, _, in := Served(p); in {
				return true, "pods its target StatefulSet creates under a recorded name are sent to the pod webhook"
			}
			return false, "the pod webhook is not called for it (unsupported targetRef)"
		},
		func(ctx context.Context, p *appsv1alpha1.PersistentPodState, conds []metav1.Condition) error {
			upd := p.DeepCopy()
			upd.Status.Conditions = conds
			_, err := client.AppsV1alpha1().PersistentPodStates(p.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
			return err
		}, clk.Now())
}
