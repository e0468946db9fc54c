package controller

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// nodeState is what one sync knows about one node: whether it exists, its
// verdict and the DaemonSet's pods that target it.
type nodeState struct {
	name    string
	exists  bool
	verdict nodeplacement.Verdict
	// pods target the node (bound there or pinned to it), oldest first;
	// pods both terminal and being deleted are left out (nothing to do).
	pods []*corev1.Pod
}

// groupByNode builds the node states, sorted by node name, from the nodes'
// verdicts and the DaemonSet's pods. Pods whose node is unknown get a state
// with exists false.
func groupByNode(verdicts map[string]nodeplacement.Verdict, pods []*corev1.Pod) []*nodeState {
	byName := make(map[string]*nodeState, len(verdicts))
	for name, v := range verdicts {
		byName[name] = &nodeState{name: name, exists: true, verdict: v}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && isTerminal(p) {
			continue
		}
		node := nodeplacement.TargetNode(p)
		st := byName[node]
		if st == nil {
			st = &nodeState{name: node}
			byName[node] = st
		}
		st.pods = append(st.pods, p)
	}
	out := make([]*nodeState, 0, len(byName))
	for _, st := range byName {
		sortOldestFirst(st.pods)
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// sortOldestFirst orders pods as upstream's podByCreationTimestampAndPhase:
// creation time, then a Running pod before another, then name.
func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if ar, br := a.Status.Phase == corev1.PodRunning, b.Status.Phase == corev1.PodRunning; ar != br {
			return ar
		}
		return a.Name < b.Name
	})
}

// daemonAvailable is availability as the rolling update counts it: the
// status's availability (see calculateStatus) and not in PreparingDelete — a
// pod its hook holds is on its way out, so the budget must not spend it twice.
func daemonAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return podutil.IsAvailable(p, minReadySeconds, now) && podutil.IsInPlaceUpdateReady(p) && !isPreDeleting(p)
}

func isPreDeleting(p *corev1.Pod) bool {
	return p != nil && lifecycle.State(p) == pub.LifecycleStatePreparingDelete
}

// managePlan is what manage decides.
type managePlan struct {
	// create: nodes that need a pod, sorted by name.
	create []string
	// delete: pods to delete (through the preDelete hook).
	delete []*corev1.Pod
	// failed: failed pods to delete, subject to the per-node back-off.
	failed []*corev1.Pod
	// desired is the number of nodes that should run the daemon; updated
	// the number of those with a pod at the update revision.
	desired, updated int
}

// manageInput is what planManage looks at.
type manageInput struct {
	nodes           []*nodeState
	hash            string
	generation      *string
	surge           bool // the rolling update may run two pods on a node
	minReadySeconds int32
	now             time.Time
	// partition and progressive: with progressive creation, the partition
	// also holds back pods on nodes that have none.
	partition   int
	progressive bool
}

// planManage decides, node by node as upstream's podsShouldBeOnNode does:
//   - a node that should run the daemon and has no pod gets one;
//   - on a node where a pod may stay, failed pods are deleted (with
//     back-off), succeeded and PreparingDelete ones deleted (the latter
//     once their hook is released), and of the rest only the oldest is
//     kept — or, while surging, the oldest updated and the oldest old one
//     until the updated one is available or the old one not ready;
//   - a node where no pod may stay loses them all;
//   - unscheduled pods whose node is gone are deleted.
func planManage(in manageInput) managePlan {
	var plan managePlan
	for _, st := range in.nodes {
		if st.exists && st.verdict.ShouldRun {
			plan.desired++
			if newPod, _, ok := splitPods(st.pods, in.hash, in.generation); ok && newPod != nil {
				plan.updated++
			}
		}
		switch {
		case !st.exists:
			for _, p := range st.pods {
				if p.DeletionTimestamp == nil && p.Spec.NodeName == "" {
					plan.delete = append(plan.delete, p)
				}
			}
		case st.verdict.ShouldRun && len(st.pods) == 0:
			plan.create = append(plan.create, st.name)
		case st.verdict.ShouldContinueRunning:
			planRunningNode(&plan, st, in)
		default:
			for _, p := range st.pods {
				if p.DeletionTimestamp == nil {
					plan.delete = append(plan.delete, p)
				}
			}
		}
	}
	if in.progressive && in.partition > 0 {
		plan.create = progressiveCreates(plan.create, plan.desired, plan.updated, in.partition)
	}
	return plan
}

func planRunningNode(plan *managePlan, st *nodeState, in manageInput) {
	var running []*corev1.Pod
	for _, p := range st.pods {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Status.Phase == corev1.PodFailed:
			plan.failed = append(plan.failed, p)
		case p.Status.Phase == corev1.PodSucceeded, isPreDeleting(p):
			plan.delete = append(plan.delete, p)
		default:
			running = append(running, p)
		}
	}
	if !in.surge {
		if len(running) > 1 {
			plan.delete = append(plan.delete, running[1:]...)
		}
		return
	}
	if len(running) <= 1 {
		if len(running) == 0 && st.verdict.ShouldRun {
			plan.create = append(plan.create, st.name)
		}
		return
	}
	var oldestNew, oldestOld *corev1.Pod
	for _, p := range running {
		switch {
		case isUpdated(p, in.hash, in.generation) && oldestNew == nil:
			oldestNew = p
		case !isUpdated(p, in.hash, in.generation) && oldestOld == nil:
			oldestOld = p
		default:
			plan.delete = append(plan.delete, p)
		}
	}
	if oldestNew != nil && oldestOld != nil &&
		(!podutil.IsReady(oldestOld) || daemonAvailable(oldestNew, in.minReadySeconds, in.now)) {
		plan.delete = append(plan.delete, oldestOld)
	}
}

// progressiveCreates keeps, of the nodes needing a pod (sorted by name),
// only as many as the partition leaves room for: desired − updated −
// partition (never negative).
func progressiveCreates(nodes []string, desired, updated, partition int) []string {
	partition = min(max(partition, 0), desired)
	n := min(max(desired-updated-partition, 0), len(nodes))
	return nodes[:n]
}

// splitPods finds the updated and the old pod among a node's pods not
// being deleted; ok is false when there is more than one of either (manage
// cleans that up first).
func splitPods(pods []*corev1.Pod, hash string, generation *string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(p, hash, generation) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
			continue
		}
		if oldPod != nil {
			return nil, nil, false
		}
		oldPod = p
	}
	return newPod, oldPod, true
}

func countDesired(nodes []*nodeState) int {
	n := 0
	for _, st := range nodes {
		if st.exists && st.verdict.ShouldRun {
			n++
		}
	}
	return n
}
