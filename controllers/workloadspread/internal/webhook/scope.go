package webhook

import (
	"sort"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Match conditions the leader keeps on the webhook entries.
const (
	// TargetsCondition (pod creation): the pod's namespace has a
	// WorkloadSpread and the pod's controller is its target (or, for a
	// Deployment, one of its ReplicaSets by name). "false" with no
	// WorkloadSpread: the API server never calls.
	TargetsCondition = kitwebhook.OwnedPrefix + "workloadspread-targets"
	// PlacedCondition (pod deletion): the pod carries the subset
	// annotation and its namespace has a WorkloadSpread.
	PlacedCondition = kitwebhook.OwnedPrefix + "workloadspread-placed"
	// NamespacesCondition (eviction: the object is the Eviction, not the
	// pod): the namespace has a WorkloadSpread.
	NamespacesCondition = kitwebhook.OwnedPrefix + "workloadspread-namespaces"
)

// maxScopeLen bounds the creation expression: beyond it only the
// namespaces are kept (wider, never narrower).
const maxScopeLen = 32 << 10

// Scopes are the creation, deletion and eviction entries' scopes for the
// WorkloadSpreads that exist.
func Scopes(all []*appsv1alpha1.WorkloadSpread) (create, del, evict kitwebhook.Scope) {
	seen := map[string]bool{}
	var nss, terms []string
	for _, ws := range all {
		if !spread.Served(ws) {
			continue
		}
		if !seen[ws.Namespace] {
			seen[ws.Namespace] = true
			nss = append(nss, ws.Namespace)
		}
		terms = append(terms, kitwebhook.AllOf(kitwebhook.NamespaceIn(ws.Namespace), ownerTerm(ws.Spec.TargetReference)))
	}
	sort.Strings(nss)
	ns := kitwebhook.NamespaceIn(nss...)
	expr := kitwebhook.AnyOf(terms...)
	if len(expr) > maxScopeLen {
		expr = ns
	}
	create = kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: TargetsCondition, Expression: expr}}}
	placed := kitwebhook.AllOf(ns, "oldObject != null && ("+kitwebhook.HasAnnotation("oldObject", spread.AnnotationKey)+")")
	del = kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: PlacedCondition, Expression: placed}}}
	evict = kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: NamespacesCondition, Expression: ns}}}
	return create, del, evict
}

// ownerTerm is true for a pod whose controller reference may be t's.
func ownerTerm(t *appsv1alpha1.TargetReference) string {
	k := workload.KindOf(t)
	kind, group, name := t.Kind, k.Group, "r.name == "+strconv.Quote(t.Name)
	if k == (workload.Kind{Group: "apps", Kind: "Deployment"}) {
		kind, name = "ReplicaSet", "r.name.startsWith("+strconv.Quote(t.Name+"-")+")"
	}
	return "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && " +
		"r.kind == " + strconv.Quote(kind) + " && r.apiVersion.startsWith(" + strconv.Quote(group+"/") + ") && " + name + ")"
}
