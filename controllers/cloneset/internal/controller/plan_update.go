package controller

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/updatesort"
)

// updateCandidates are the pods that may be updated now: going forward, those
// not at the update revision; rolling back, those at it. Pods in
// PreparingDelete are left alone, and so are pods waiting out an in-place
// grace period — unless their lifecycle already says Updated, as
// OpenKruise decides. Specified-delete pods are candidates like any other
// (OpenKruise does not skip them either; scale deletes them anyway).
func (st *syncState) updateCandidates(forward bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range st.pods {
		if forward == st.isUpdated(p) || isPreparingDelete(p) {
			continue
		}
		if _, grace := pub.GetInPlaceUpdateGrace(p); grace && lifecycle.State(p) != pub.LifecycleStateUpdated {
			continue
		}
		out = append(out, p)
	}
	return out
}

// sortForUpdate orders candidates: Kubernetes' active-pod order (unscheduled,
// pending, not ready, recently ready first), then the priority and scatter
// strategies, then pods already waiting in PreparingUpdate first.
func sortForUpdate(st *syncState, pods []*corev1.Pod) []*corev1.Pod {
	order := podutil.DeletionOrder{MinReadySeconds: st.cs.Spec.MinReadySeconds, Now: st.now}
	us := st.cs.Spec.UpdateStrategy
	pods = updatesort.Sort(order.Sort(pods), us.PriorityStrategy, us.ScatterStrategy)
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		pa, pb := lifecycle.State(a) == pub.LifecycleStatePreparingUpdate, lifecycle.State(b) == pub.LifecycleStatePreparingUpdate
		switch {
		case pa && !pb:
			return -1
		case !pa && pb:
			return 1
		}
		return 0
	})
	return pods
}

// limitUpdates keeps at most n pods and stops before the pass could make
// more than maxUnavailable pods unavailable, counting two ways as OpenKruise
// does: pods already unavailable at the target revision plus the pods
// updated in this pass may not reach maxUnavailable (so crash-looping pods
// are not all rolled at once), and an available pod is updated only while
// the unavailable pods of all revisions stay below it (updating a pod that
// is already unavailable costs nothing there).
func limitUpdates(st *syncState, pods []*corev1.Pod, n, maxUnavailable int, target *appsv1.ControllerRevision) []*corev1.Pod {
	pods = pods[:min(n, len(pods))]
	unavailable, targetUnavailable := 0, 0
	for _, p := range st.pods {
		if !podutil.IsWorkloadAvailable(p, st.cs.Spec.MinReadySeconds, st.now) {
			unavailable++
			if revisionMatches(p, target.Name) {
				targetUnavailable++
			}
		}
	}
	for i, p := range pods {
		if targetUnavailable+i >= maxUnavailable {
			return pods[:i]
		}
		if podutil.IsWorkloadAvailable(p, st.cs.Spec.MinReadySeconds, st.now) {
			if unavailable >= maxUnavailable {
				return pods[:i]
			}
			unavailable++
		}
	}
	return pods
}
