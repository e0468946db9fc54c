package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// ScopeCondition is the name of the match condition the controller keeps on
// the pod webhook.
const ScopeCondition = kitwebhook.OwnedPrefix + "sidecarset-selectors"

// maxScopeLen bounds the scope expression: beyond it (hundreds of
// SidecarSets) the per-SidecarSet label terms are dropped and only their
// namespaces kept, then the condition becomes "true" — a wider scope, never
// a narrower one.
const maxScopeLen = 32 << 10

// PodScope is the pod webhook's scope for the SidecarSets that exist: one
// match condition, true for a pod some SidecarSet could inject into — its
// labels match the SidecarSet's selector and its namespace is the
// SidecarSet's spec.namespace, or one its namespaceSelector names through
// kubernetes.io/metadata.name (other namespace selectors need the
// Namespace's labels, which a match condition cannot see: such a
// SidecarSet's label term holds in every namespace, the handler decides).
// With no SidecarSet (or only paused ones) the condition is "false": the API
// server never calls the webhook, so pod creation cannot wait on it.
func PodScope(sets []*appsv1alpha1.SidecarSet) (kitwebhook.Scope, error) {
	var full, nsOnly []string
	for _, s := range sets {
		if !Served(s) {
			continue
		}
		ns := namespaceTerm(s)
		labels, err := kitwebhook.LabelsMatch("object", s.Spec.Selector)
		if err != nil {
			return kitwebhook.Scope{}, err
		}
		full = append(full, kitwebhook.AllOf(ns, labels))
		nsOnly = append(nsOnly, ns)
	}
	expr := kitwebhook.AnyOf(full...)
	if len(expr) > maxScopeLen {
		expr = kitwebhook.AnyOf(nsOnly...)
	}
	if len(expr) > maxScopeLen {
		expr = kitwebhook.Always
	}
	return kitwebhook.Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: ScopeCondition, Expression: expr}}}, nil
}

// Served reports whether a SidecarSet has a term in the scope: not paused,
// not being deleted, a selector that selects something (an empty one
// injects nowhere, sidecarcontrol.Selector).
func Served(s *appsv1alpha1.SidecarSet) bool {
	sel := s.Spec.Selector
	return !s.Spec.InjectionStrategy.Paused && s.DeletionTimestamp == nil &&
		sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0)
}

// namespaceTerm is the namespace part of a SidecarSet's scope.
func namespaceTerm(s *appsv1alpha1.SidecarSet) string {
	if s.Spec.Namespace != "" {
		return kitwebhook.NamespaceIn(s.Spec.Namespace)
	}
	if names, ok := namespaceNames(s.Spec.NamespaceSelector); ok {
		return kitwebhook.NamespaceIn(names...)
	}
	return kitwebhook.Always
}

// namespaceNames returns the namespace names a selector restricts to through
// the kubernetes.io/metadata.name label (matchLabels or an In expression).
func namespaceNames(sel *metav1.LabelSelector) ([]string, bool) {
	if sel == nil {
		return nil, false
	}
	if v, ok := sel.MatchLabels[corev1.LabelMetadataName]; ok {
		return []string{v}, true
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn {
			return r.Values, true
		}
	}
	return nil, false
}
