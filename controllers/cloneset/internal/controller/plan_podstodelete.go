package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// missingPodsToDelete returns the names in spec.scaleStrategy.podsToDelete
// that no pod of the CloneSet has and that this process did not delete.
func (st *syncState) missingPodsToDelete(pods []*corev1.Pod) []string {
	if len(st.cs.Spec.ScaleStrategy.PodsToDelete) == 0 {
		return nil
	}
	names := sets.New[string]()
	for _, p := range pods {
		names.Insert(p.Name)
	}
	var out []string
	for _, n := range st.cs.Spec.ScaleStrategy.PodsToDelete {
		if !names.Has(n) && !st.deleted.Has(n) {
			out = append(out, n)
		}
	}
	return out
}
