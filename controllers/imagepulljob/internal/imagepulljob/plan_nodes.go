package imagepulljob

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// chooseNodeImages returns the NodeImages (one per node) the job pulls on, sorted by name, as OpenKruise chooses
// them: podSelector — the nodes of the job's active, scheduled pods matching it; no selector — every node;
// selector.names — those nodes (names win over labels when both are set); otherwise the label selector against the
// NodeImages' labels (copies of their nodes'). Nodes without a NodeImage are skipped (it is created when the node is
// Ready). byName holds every cached NodeImage; pods are the cached pods of the job's namespace.
func chooseNodeImages(spec *appsv1beta1.ImagePullJobSpec, byName map[string]*appsv1beta1.NodeImage, pods []*corev1.Pod) ([]*appsv1beta1.NodeImage, error) {
	var names []string
	switch {
	case spec.PodSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(&spec.PodSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.podSelector: %w", err)
		}
		for _, p := range pods {
			if activeScheduled(p) && sel.Matches(labels.Set(p.Labels)) {
				names = append(names, p.Spec.NodeName)
			}
		}
	case spec.Selector == nil:
		for name := range byName {
			names = append(names, name)
		}
	case spec.Selector.Names != nil:
		names = append(names, spec.Selector.Names...)
	default:
		sel, err := metav1.LabelSelectorAsSelector(&spec.Selector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.selector: %w", err)
		}
		for name, ni := range byName {
			if sel.Matches(labels.Set(ni.Labels)) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]*appsv1beta1.NodeImage, 0, len(names))
	for _, name := range names {
		if ni, ok := byName[name]; ok {
			out = append(out, ni)
		}
	}
	return out, nil
}

// activeScheduled: the pod is on a node and neither finished nor going away.
func activeScheduled(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// selectsNodeImage reports whether a job without podSelector selects ni (used to map NodeImage events to jobs).
// A job with podSelector is matched through its pods instead.
func selectsNodeImage(spec *appsv1beta1.ImagePullJobSpec, ni *appsv1beta1.NodeImage) bool {
	switch {
	case spec.PodSelector != nil:
		return false
	case spec.Selector == nil:
		return true
	case spec.Selector.Names != nil:
		return slices.Contains(spec.Selector.Names, ni.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(&spec.Selector.LabelSelector)
	return err == nil && sel.Matches(labels.Set(ni.Labels))
}
