package podutil

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DeletionOrder orders pods for scale-down: pods that compare first are the
// ones to delete first. It is the order OpenKruise's CloneSet scale-down uses
// (ActivePodsWithRanks), shared here so every workload that chooses among
// interchangeable pods picks the same ones. Rules, each consulted only when
// all earlier rules tie:
//
//  1. unassigned (no spec.nodeName) before assigned;
//  2. phase Pending before Unknown before Running (any other phase, including
//     "", ranks with Pending);
//  3. unavailable before available, where available means
//     IsWorkloadAvailable(pod, MinReadySeconds, Now) (skipped with
//     IgnoreAvailability);
//  4. not ready before ready (separates unavailable pods);
//  5. lower DeletionCost first;
//  6. higher Rank first;
//  7. if both are ready, the one ready more recently first (a ready pod with
//     no Ready transition time counts as the most recent);
//  8. more container restarts first (the highest restartCount of any container, as Kubernetes orders pods);
//  9. newer first by creationTimestamp (a zero timestamp counts as newest);
//  10. then by name, then namespace, so the order is total and deterministic.
//
// The zero DeletionOrder is usable: no ranks, minReadySeconds 0.
type DeletionOrder struct {
	// Rank returns a pod's rank; pods with a higher rank are deleted first
	// (RankBySameNode, RankBySpread). Nil ranks every pod 0.
	Rank func(*corev1.Pod) float64
	// IgnoreAvailability leaves rule 3 out, as OpenKruise does when it orders
	// the pods of one node or one topology domain to rank them.
	IgnoreAvailability bool
	// MinReadySeconds is the workload's spec.minReadySeconds (rule 3).
	MinReadySeconds int32
	// Now is the time availability is judged at (rule 3). It matters only
	// when MinReadySeconds > 0.
	Now time.Time
}

// SortForDeletion returns a new slice holding pods in deletion order (see
// DeletionOrder), the first pods being the ones to delete. The input slice
// and the pods are not modified, so pods straight from an informer cache are
// fine. rank may be nil. Availability is judged with minReadySeconds 0; use
// DeletionOrder directly to pass the workload's minReadySeconds.
func SortForDeletion(pods []*corev1.Pod, rank func(*corev1.Pod) float64, now time.Time) []*corev1.Pod {
	return DeletionOrder{Rank: rank, Now: now}.Sort(pods)
}

// Sort returns a new slice holding pods in deletion order, first to delete
// first. Neither the input slice nor the pods are modified. Each pod's sort
// key is computed once, so sorting does not allocate per comparison.
func (o DeletionOrder) Sort(pods []*corev1.Pod) []*corev1.Pod {
	keys := make([]deletionKey, len(pods))
	idx := make([]int32, len(pods))
	for i, p := range pods {
		keys[i] = o.key(p)
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := compareDeletionKeys(&keys[a], &keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // equal keys (same name and namespace): keep input order
	})
	out := make([]*corev1.Pod, len(pods))
	for i, j := range idx {
		out[i] = pods[j]
	}
	return out
}

// Less reports whether a should be deleted before b.
func (o DeletionOrder) Less(a, b *corev1.Pod) bool {
	ka, kb := o.key(a), o.key(b)
	return compareDeletionKeys(&ka, &kb) < 0
}

// deletionKey is everything DeletionOrder compares, extracted once per pod.
type deletionKey struct {
	assigned  bool
	phase     int8
	available bool
	ready     bool
	cost      int32
	rank      float64
	readyAt   int64 // unix nanos; math.MaxInt64 when ready with no transition time
	restarts  int64
	createdAt int64 // unix nanos; math.MaxInt64 when unset
	name      string
	namespace string
}

func (o DeletionOrder) key(p *corev1.Pod) deletionKey {
	k := deletionKey{
		assigned:  p.Spec.NodeName != "",
		phase:     phaseOrdinal(p.Status.Phase),
		cost:      DeletionCost(p),
		createdAt: nanosOrMax(p.CreationTimestamp.Time),
		name:      p.Name,
		namespace: p.Namespace,
	}
	var since time.Time
	since, k.ready = ReadySince(p)
	if k.ready {
		k.readyAt = nanosOrMax(since)
		k.available = !o.IgnoreAvailability && IsWorkloadAvailable(p, o.MinReadySeconds, o.Now)
	}
	if o.Rank != nil {
		k.rank = o.Rank(p)
	}
	for i := range p.Status.ContainerStatuses {
		k.restarts = max(k.restarts, int64(p.Status.ContainerStatuses[i].RestartCount))
	}
	return k
}

func phaseOrdinal(p corev1.PodPhase) int8 {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default: // Pending, "", and phases an active pod should not have
		return 0
	}
}

func nanosOrMax(t time.Time) int64 {
	if t.IsZero() {
		return math.MaxInt64
	}
	return t.UnixNano()
}

func compareBool(firstIfFalse, other bool) int {
	if firstIfFalse == other {
		return 0
	}
	if !firstIfFalse {
		return -1
	}
	return 1
}

// compareDeletionKeys returns <0 when a is to be deleted before b.
func compareDeletionKeys(a, b *deletionKey) int {
	if c := compareBool(a.assigned, b.assigned); c != 0 { // 1. unassigned first
		return c
	}
	if c := cmp.Compare(a.phase, b.phase); c != 0 { // 2. Pending < Unknown < Running
		return c
	}
	if c := compareBool(a.available, b.available); c != 0 { // 3. unavailable first
		return c
	}
	if c := compareBool(a.ready, b.ready); c != 0 { // 4. not ready first
		return c
	}
	if c := cmp.Compare(a.cost, b.cost); c != 0 { // 5. lower cost first
		return c
	}
	if c := cmp.Compare(b.rank, a.rank); c != 0 { // 6. higher rank first
		return c
	}
	if a.ready && b.ready { // 7. ready more recently first
		if c := cmp.Compare(b.readyAt, a.readyAt); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(b.restarts, a.restarts); c != 0 { // 8. more restarts first
		return c
	}
	if c := cmp.Compare(b.createdAt, a.createdAt); c != 0 { // 9. newer first
		return c
	}
	if c := strings.Compare(a.name, b.name); c != 0 { // 10. tie-break
		return c
	}
	return strings.Compare(a.namespace, b.namespace)
}
