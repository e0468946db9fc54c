package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// limitAvailable keeps every pod that is not ready and at most limit ready
// ones. "Ready" is availability without minReadySeconds, as OpenKruise
// counts this budget: a pod that became ready a second ago already costs.
func limitAvailable(st *syncState, pods []*corev1.Pod, limit int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if !podutil.IsWorkloadAvailable(p, 0, st.now) {
			out = append(out, p)
		} else if limit > 0 {
			out = append(out, p)
			limit--
		}
	}
	return out
}

// choosePodsToDelete picks d.scaleDown pods for scale-in: pods at the current
// revision first (up to d.scaleDownOld), then updated ones, each group in
// deletion order with ranks computed within the group, then limits ready
// ones to d.deleteReadyLimit.
func (c *Controller) choosePodsToDelete(st *syncState, d diffs) []*corev1.Pod {
	var updated, old []*corev1.Pod
	for _, p := range st.pods {
		if st.isUpdated(p) {
			updated = append(updated, p)
		} else {
			old = append(old, p)
		}
	}
	fromOld := min(d.scaleDownOld, d.scaleDown)
	chosen := c.pickForDeletion(st, old, fromOld)
	chosen = append(chosen, c.pickForDeletion(st, updated, d.scaleDown-len(chosen))...)
	return limitAvailable(st, chosen, d.deleteReadyLimit)
}

// pickForDeletion returns the first n of pods in deletion order. The rank
// (behaviour §1.1 in docs/openkruise-behaviour.md, v0.10 seed) is computed over this group only: by
// topology domain when the template has topologySpreadConstraints, else by
// node.
func (c *Controller) pickForDeletion(st *syncState, pods []*corev1.Pod, n int) []*corev1.Pod {
	if n <= 0 {
		return nil
	}
	// Sorted even when all of them go: deleteReadyLimit then keeps the
	// ready pods that sort last, not whichever the cache listed last.
	order := podutil.DeletionOrder{Rank: podutil.RankBySameNode(pods), MinReadySeconds: st.cs.Spec.MinReadySeconds, Now: st.now}
	if keys := spreadKeys(&st.cs.Spec.Template.Spec); len(keys) > 0 {
		order.Rank = podutil.RankBySpread(pods, keys, c.nodeLabels)
	}
	return order.Sort(pods)[:min(n, len(pods))]
}

func spreadKeys(spec *corev1.PodSpec) []string {
	var keys []string
	for _, c := range spec.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
	}
	return keys
}
