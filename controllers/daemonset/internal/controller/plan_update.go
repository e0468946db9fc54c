package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// updateInput is what planRollingUpdate looks at.
type updateInput struct {
	nodes      []*nodeState // sorted by name
	hash       string
	generation *string
	// maxSurge, maxUnavailable: resolved budgets (surgeAndUnavailable).
	maxSurge, maxUnavailable int
	// partition: nodes kept at the old revision; selector: when set, only
	// nodes whose labels match are updated (nil: all).
	partition       int
	selector        labels.Selector
	nodeLabels      func(node string) map[string]string
	minReadySeconds int32
	now             time.Time
	// pruneIneligible (gate DaemonSetPruneIneligibleNodes): nodes that should
	// not run the daemon are left out of the update and of its budget even
	// when their pod may stay (e.g. a NoSchedule taint).
	pruneIneligible bool
}

// updatePlan is what one rolling-update step does.
type updatePlan struct {
	// replace: old pods to replace. Without surge they are deleted (or
	// updated in place) and manage recreates them; with surge they are
	// deleted because their node's new pod is available.
	replace []*corev1.Pod
	// create: nodes that get a new pod next to their old one (surge).
	create []string
}

// nodesToUpdate picks the nodes the update may touch and orders them as
// OpenKruise does: node names in reverse order, nodes already updated first,
// then nodes being updated (no pod, or one in PreparingDelete), then the
// rest (with a rollingUpdate.selector: only matching nodes); the list is cut
// to the number of nodes minus the partition, so the partition keeps the
// lowest-named nodes old. Nodes that no longer exist are left out.
func nodesToUpdate(in updateInput) []*nodeState {
	var updated, updating, rest []*nodeState
	total := 0
	for i := len(in.nodes) - 1; i >= 0; i-- {
		st := in.nodes[i]
		if !st.exists || (len(st.pods) == 0 && !st.verdict.ShouldRun) || (in.pruneIneligible && !st.verdict.ShouldRun) {
			continue
		}
		total++
		newPod, oldPod, ok := splitPods(st.pods, in.hash, in.generation)
		switch {
		case !ok || newPod != nil:
			updated = append(updated, st)
		case oldPod == nil || isPreDeleting(oldPod):
			updating = append(updating, st)
		case in.selector != nil && !in.selector.Matches(labels.Set(in.nodeLabels(st.name))):
		default:
			rest = append(rest, st)
		}
	}
	out := append(append(updated, updating...), rest...)
	if maxUpdate := total - in.partition; maxUpdate <= 0 {
		return nil
	} else if maxUpdate < len(out) {
		out = out[:maxUpdate]
	}
	return out
}

// planRollingUpdate decides one step of the rolling update over the nodes
// nodesToUpdate allows, with upstream's rules.
//
// Without surge, old pods are replaced as long as fewer than maxUnavailable
// nodes are unavailable; an old pod that is unavailable anyway is always
// replaceable. A node with no pod, with both pods, with an unavailable or
// PreparingDelete updated pod, or with excess pods counts as unavailable.
//
// With surge, a node whose old pod is available gets a new pod next to it
// while fewer than maxSurge nodes are surging; a node whose old pod is
// unavailable gets one at once; an old pod goes once its node's new pod is
// available.
func planRollingUpdate(in updateInput) updatePlan {
	nodes := nodesToUpdate(in)
	available := func(p *corev1.Pod) bool { return daemonAvailable(p, in.minReadySeconds, in.now) }
	var plan updatePlan
	if in.maxSurge == 0 {
		numUnavailable := 0
		var allowed, candidates []*corev1.Pod
		for _, st := range nodes {
			newPod, oldPod, ok := splitPods(st.pods, in.hash, in.generation)
			switch {
			case !ok:
				numUnavailable++
			case (oldPod == nil || isPreDeleting(oldPod)) && (newPod == nil || isPreDeleting(newPod)),
				oldPod != nil && !isPreDeleting(oldPod) && newPod != nil && !isPreDeleting(newPod):
				numUnavailable++
			case newPod != nil:
				if !available(newPod) || isPreDeleting(newPod) {
					numUnavailable++
				}
			case !available(oldPod):
				allowed = append(allowed, oldPod)
				numUnavailable++ // as upstream (OpenKruise does not count it)
			case numUnavailable >= in.maxUnavailable:
			default:
				candidates = append(candidates, oldPod)
			}
		}
		room := min(max(in.maxUnavailable-numUnavailable, 0), len(candidates))
		plan.replace = append(allowed, candidates[:room]...)
		return plan
	}
	numSurge := 0
	var allowed, candidates []string
	for _, st := range nodes {
		newPod, oldPod, ok := splitPods(st.pods, in.hash, in.generation)
		switch {
		case !ok:
			numSurge++
		case oldPod == nil || isPreDeleting(oldPod):
		case newPod == nil:
			switch {
			case !available(oldPod):
				allowed = append(allowed, st.name)
			case numSurge >= in.maxSurge:
			default:
				candidates = append(candidates, st.name)
			}
		case !available(newPod) || isPreDeleting(newPod):
			numSurge++
		default:
			plan.replace = append(plan.replace, oldPod)
		}
	}
	room := min(max(in.maxSurge-numSurge, 0), len(candidates))
	plan.create = append(allowed, candidates[:room]...)
	return plan
}
