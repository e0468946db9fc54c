package sidecarcontrol

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Matches reports whether set selects pod: spec.namespace (when set) equals
// the pod's namespace, spec.namespaceSelector (when set) matches nsLabels
// (the labels of the pod's Namespace), and spec.selector matches the pod's
// labels. An invalid selector is an error.
func Matches(pod *corev1.Pod, nsLabels map[string]string, set *appsv1alpha1.SidecarSet) (bool, error) {
	ns := pod.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if set.Spec.Namespace != "" && set.Spec.Namespace != ns {
		return false, nil
	}
	if set.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.NamespaceSelector)
		if err != nil {
			return false, fmt.Errorf("sidecarset %s: spec.namespaceSelector: %w", set.Name, err)
		}
		if !sel.Matches(labels.Set(nsLabels)) {
			return false, nil
		}
	}
	sel, err := Selector(set)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(pod.Labels)), nil
}

// Selector is spec.selector as a labels.Selector. An empty or missing
// selector matches nothing: a SidecarSet must not inject into every pod by
// accident (the schema also requires one).
func Selector(set *appsv1alpha1.SidecarSet) (labels.Selector, error) {
	if set.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("sidecarset %s: spec.selector: %w", set.Name, err)
	}
	if sel.Empty() {
		return labels.Nothing(), nil
	}
	return sel, nil
}

// Select returns the SidecarSets that would inject into pod at creation, in
// name order: matching (Matches) and not injectionStrategy.paused.
func Select(pod *corev1.Pod, nsLabels map[string]string, all []*appsv1alpha1.SidecarSet) ([]*appsv1alpha1.SidecarSet, error) {
	var out []*appsv1alpha1.SidecarSet
	for _, set := range all {
		if set.Spec.InjectionStrategy.Paused || set.DeletionTimestamp != nil {
			continue
		}
		ok, err := Matches(pod, nsLabels, set)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, set)
		}
	}
	sortByName(out)
	return out, nil
}
