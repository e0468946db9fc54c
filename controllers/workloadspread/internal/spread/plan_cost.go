package spread

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// CostKinds are the target kinds whose controllers honour the deletion
// cost (OpenKruise: ReplicaSet, Deployment, CloneSet).
func CostKinds(kind string) bool {
	return kind == "ReplicaSet" || kind == "Deployment" || kind == "CloneSet"
}

// DeletionCosts returns the pod-deletion-cost each active pod of bySubset
// should carry, as OpenKruise computes it: subset i of n (in spec order)
// gives its pods within maxReplicas 100*(n-i) and the ones beyond it (the
// first in kit's deletion order) -100*(i+1); pods in no subset get
// -100*(n+1). So a scale-in deletes first the pods beyond their subset's
// limit, then the later subsets' (the elastic subset empties first).
func DeletionCosts(ws *appsv1alpha1.WorkloadSpread, bySubset map[string][]*corev1.Pod, replicas int32, now time.Time) map[string]string {
	n := len(ws.Spec.Subsets)
	out := map[string]string{}
	set := func(pods []*corev1.Pod, cost int) {
		for _, p := range pods {
			out[p.Name] = strconv.Itoa(cost)
		}
	}
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		active := activeOf(bySubset[s.Name])
		max, err := MaxReplicas(s, replicas)
		if err != nil {
			continue
		}
		if max < 0 || len(active) <= int(max) {
			set(active, CostPositive*(n-i))
			continue
		}
		ordered := podutil.SortForDeletion(active, nil, now)
		extra := len(active) - int(max)
		set(ordered[:extra], CostNegative*(i+1))
		set(ordered[extra:], CostPositive*(n-i))
	}
	set(activeOf(bySubset[FakeSubsetName]), CostNegative*(n+1))
	return out
}

func activeOf(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if podutil.IsActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// CostPatchNeeded reports whether pod must be patched to carry cost (an
// absent annotation stands for "0").
func CostPatchNeeded(pod *corev1.Pod, cost string) bool {
	old, ok := pod.Annotations[DeletionCostKey]
	return ok && old != cost || !ok && cost != "0"
}
