package controller

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// targetSelector is a distribution's spec.targets, parsed once per sync.
type targetSelector struct {
	all      bool
	included sets.Set[string]
	excluded sets.Set[string]
	// selector is nil when namespaceLabelSelector is empty: it then matches no namespace (not every one).
	selector labels.Selector
}

func newTargetSelector(t *appsv1alpha1.ResourceDistributionTargets) (*targetSelector, error) {
	s := &targetSelector{all: t.AllNamespaces, included: names(t.IncludedNamespaces), excluded: names(t.ExcludedNamespaces)}
	if len(t.NamespaceLabelSelector.MatchLabels) > 0 || len(t.NamespaceLabelSelector.MatchExpressions) > 0 {
		sel, err := metav1.LabelSelectorAsSelector(&t.NamespaceLabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.targets.namespaceLabelSelector: %w", err)
		}
		s.selector = sel
	}
	return s, nil
}

func names(l appsv1alpha1.ResourceDistributionTargetNamespaces) sets.Set[string] {
	s := sets.New[string]()
	for _, n := range l.List {
		s.Insert(n.Name)
	}
	return s
}

// matches reports whether an existing namespace is a target: excludedNamespaces wins over the union of
// allNamespaces, includedNamespaces and the label selector (OpenKruise's precedence).
func (s *targetSelector) matches(ns *corev1.Namespace) bool {
	if s.excluded.Has(ns.Name) {
		return false
	}
	return s.all || s.included.Has(ns.Name) || (s.selector != nil && s.selector.Matches(labels.Set(ns.Labels)))
}

// targetNamespaces returns the sorted target namespace names: every existing namespace that matches, plus the
// included ones that do not exist (they are targets too, reported as NamespaceNotExists, as in OpenKruise).
func (s *targetSelector) targetNamespaces(namespaces []*corev1.Namespace) []string {
	out := sets.New[string]()
	for _, ns := range namespaces {
		if s.matches(ns) {
			out.Insert(ns.Name)
		}
	}
	for n := range s.included {
		if !s.excluded.Has(n) {
			out.Insert(n)
		}
	}
	l := out.UnsortedList()
	slices.Sort(l)
	return l
}
