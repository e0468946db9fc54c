package nodeplacement

import corev1 "k8s.io/api/core/v1"

// NodeNameField is the node field the scheduler matches in matchFields terms.
const NodeNameField = "metadata.name"

// PinToNode returns affinity (which it may modify: pass a copy) whose required node affinity only matches
// node, so that kube-scheduler places the pod there (and honours the rest of the spec, or says why not).
// Terms are ORed, so every term gets the node constraint; the user's own expressions stay ANDed with it and
// their own metadata.name fields are replaced.
func PinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	field := corev1.NodeSelectorRequirement{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{field}}},
		}
		return affinity
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		fields := []corev1.NodeSelectorRequirement{field}
		for _, f := range terms[i].MatchFields {
			if f.Key != NodeNameField {
				fields = append(fields, f)
			}
		}
		terms[i].MatchFields = fields
	}
	return affinity
}

// TargetNode is the node a pod belongs to: where it is bound, else the node its affinity pins it to ("" if
// neither).
func TargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == NodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
