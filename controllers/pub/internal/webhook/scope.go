package webhook

import (
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Match conditions the leader keeps on the webhook entries.
const (
	// NamespacesCondition: the request's namespace has a budget. With no
	// budget at all it is "false": the API server never calls.
	NamespacesCondition = kitwebhook.OwnedPrefix + "pub-namespaces"
	// RelatedCondition (pod entry only): the pod carries the related-pub
	// annotation the controller writes. An eviction's object is the
	// Eviction, not the pod, so the eviction entry is scoped by namespace
	// only and the handler's lookup does the rest.
	RelatedCondition = kitwebhook.OwnedPrefix + "pub-related"
	// InPlaceStartCondition (pod entry only): of pods/status updates, only
	// the one turning InPlaceUpdateReady False is sent (kubelet's status
	// writes never are).
	InPlaceStartCondition = kitwebhook.OwnedPrefix + "pub-inplace-start"
	// NotTerminatingCondition (pod entry only): the (old) pod has no
	// deletionTimestamp. The guard exempts terminating pods, so the
	// kubelet's final grace-0 DELETE, finalizer removals and every other
	// write to a pod already going away never wait on it: with no replica
	// answering (failurePolicy Fail) they would otherwise be refused, pods
	// would stay Terminating and namespace deletion would hang.
	NotTerminatingCondition = kitwebhook.OwnedPrefix + "pub-not-terminating"
	// DisruptingUpdateCondition (pod entry only): of pod UPDATEs (no
	// subresource), only those the guard can refuse are sent — the spec
	// changes (an in-place image or resources update) or an
	// unavailable-pod.kruise.io/ label appears (pubcontrol.UpdateOperation).
	// Label, annotation, finalizer and owner patches never call it.
	DisruptingUpdateCondition = kitwebhook.OwnedPrefix + "pub-disrupting-update"
)

func inPlaceFalse(obj string) string {
	return "has(" + obj + ".status.conditions) && " + obj + `.status.conditions.exists(c, c.type == "` + string(pub.InPlaceUpdateReady) + `" && c.status == "False")`
}

// inPlaceStartExpr lets every request through except a pods/status update
// that does not start an in-place update.
var inPlaceStartExpr = `!has(request.subResource) || request.subResource != "status" || ((` + inPlaceFalse("object") + `) && !(` + inPlaceFalse("oldObject") + `))`

// notTerminatingExpr: the pod is not being deleted (oldObject is the pod
// on DELETE and UPDATE; null only if the rules ever sent a CREATE).
var notTerminatingExpr = "oldObject == null || !has(oldObject.metadata.deletionTimestamp)"

func hasUnavailableLabel(obj string) string {
	return "has(" + obj + ".metadata.labels) && " + obj + `.metadata.labels.exists(k, k.startsWith("` + pub.PubUnavailablePodLabelPrefix + `"))`
}

// disruptingUpdateExpr lets every DELETE and subresource request through;
// a pod UPDATE only when its spec changes or an unavailable-pod label
// appears. object and oldObject are the whole pods, so spec equality is
// the API server's deep comparison of the two.
var disruptingUpdateExpr = `request.operation != "UPDATE" || (has(request.subResource) && request.subResource != "") || ` +
	`object.spec != oldObject.spec || ((` + hasUnavailableLabel("object") + `) && !(` + hasUnavailableLabel("oldObject") + `))`

// relatedExpr is true for a pod DELETE or UPDATE whose (old) pod is marked.
var relatedExpr = "oldObject != null && (" + kitwebhook.AnyOf(
	kitwebhook.HasAnnotation("oldObject", pub.PodRelatedPubAnnotation),
	kitwebhook.HasAnnotation("oldObject", pub.PodRelatedPubAnnotationNew)) + ")"

// Scopes are the pod entry's and the eviction entry's scopes for the
// budgets that exist.
func Scopes(pubs []*policyv1alpha1.PodUnavailableBudget) (pod, eviction kitwebhook.Scope) {
	seen := map[string]bool{}
	var nss []string
	for _, p := range pubs {
		if p.DeletionTimestamp == nil && !seen[p.Namespace] {
			seen[p.Namespace] = true
			nss = append(nss, p.Namespace)
		}
	}
	sort.Strings(nss)
	ns := admissionregistrationv1.MatchCondition{Name: NamespacesCondition, Expression: kitwebhook.NamespaceIn(nss...)}
	pod = kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{ns, {Name: RelatedCondition, Expression: relatedExpr},
		{Name: InPlaceStartCondition, Expression: inPlaceStartExpr}, {Name: NotTerminatingCondition, Expression: notTerminatingExpr},
		{Name: DisruptingUpdateCondition, Expression: disruptingUpdateExpr}}}
	eviction = kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{ns}}
	return pod, eviction
}
