package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/updatesort"
)

// updateInput is what the rolling-update decision looks at.
type updateInput struct {
	slots []int
	pods  map[int]*corev1.Pod
	// partition: the pods of the first partition slots keep the current
	// revision (absolute; behaviour §1.2, docs/openkruise-behaviour.md).
	partition      int
	maxUnavailable int
	isUpdated      func(*corev1.Pod) bool
	// available: healthy for minReadySeconds, lifecycle Normal and not in
	// the middle of an in-place update.
	available func(*corev1.Pod) bool
	// unordered (Parallel only): update by priority instead of by
	// descending ordinal.
	unordered *pub.UpdatePriorityStrategy
}

// planUpdate returns the pods to update (or delete) now, in order.
// specified-delete pods come first and ignore the partition; then the pods
// not at the update revision from the highest slot down to the partition
// (or, with unorderedUpdate, by priority, at most replicas − partition
// updated in all). A target that is available is skipped once
// maxUnavailable slots are unavailable; one that is not costs nothing.
func planUpdate(in updateInput) []*corev1.Pod {
	unavailable := 0
	for _, o := range in.slots {
		if p := in.pods[o]; p == nil || !in.available(p) {
			unavailable++
		}
	}
	var targets []*corev1.Pod
	for _, o := range in.slots {
		if p := in.pods[o]; p != nil && p.DeletionTimestamp == nil && podutil.IsSpecifiedDelete(p) {
			targets = append(targets, p)
		}
	}
	targets = append(targets, revisionTargets(in)...)

	var out []*corev1.Pod
	for _, p := range targets {
		if in.available(p) {
			if unavailable >= in.maxUnavailable {
				continue
			}
			unavailable++
		}
		out = append(out, p)
	}
	return out
}

// revisionTargets are the pods to move to the update revision, in order.
func revisionTargets(in updateInput) []*corev1.Pod {
	candidate := func(p *corev1.Pod) bool {
		return p != nil && p.DeletionTimestamp == nil && !in.isUpdated(p) && !podutil.IsSpecifiedDelete(p)
	}
	var out []*corev1.Pod
	if in.unordered == nil {
		for i := len(in.slots) - 1; i >= in.partition && i >= 0; i-- {
			if p := in.pods[in.slots[i]]; candidate(p) {
				out = append(out, p)
			}
		}
		return out
	}
	updated := 0
	for _, o := range in.slots {
		p := in.pods[o]
		switch {
		case candidate(p):
			out = append(out, p)
		case p != nil && in.isUpdated(p):
			updated++
		}
	}
	allowed := max(len(in.slots)-in.partition-updated, 0)
	out = updatesort.Sort(out, in.unordered, nil)
	return out[:min(allowed, len(out))]
}

// updateMaxUnavailable is rollingUpdate.maxUnavailable rounded down, at
// least 1 (default 1).
func updateMaxUnavailable(ru *appsv1beta1.RollingUpdateStatefulSetStrategy, replicas int) int {
	if ru.MaxUnavailable == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicas, false)
	if err != nil {
		return 1
	}
	return max(n, 1)
}

// available: Running and Ready for minReadySeconds, not terminating,
// lifecycle Normal, and no in-place update pending (no grace period either,
// even without a recorded state).
func (st *syncState) available(p *corev1.Pod) bool {
	if !podutil.IsActiveAndReady(p) || !podutil.IsAvailable(p, st.minReadySeconds, st.now) || !podutil.IsLifecycleNormal(p) {
		return false
	}
	if _, grace := pub.GetInPlaceUpdateGrace(p); grace {
		return false
	}
	return podutil.IsInPlaceUpdateCompleted(p)
}
