package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// DefaultMaxUnavailable is updateStrategy.maxUnavailable when unset.
const DefaultMaxUnavailable = "20%"

// limits are the spec's rollout numbers resolved against spec.replicas with
// OpenKruise's rounding.
type limits struct {
	replicas            int
	partition           int
	maxSurge            int
	maxUnavailable      int
	scaleMaxUnavailable int // -1: unlimited
}

// resolveLimits applies the reference's rounding: partition and maxSurge round
// up, maxUnavailable rounds up without surge and down with it, a paused
// CloneSet never surges, and a partition percentage below 100% leaves at
// least one pod to update when there is more than one replica.
func resolveLimits(spec *appsv1alpha1.CloneSetSpec) limits {
	l := limits{replicas: int(ptr.Deref(spec.Replicas, 1)), scaleMaxUnavailable: -1}
	us := spec.UpdateStrategy
	l.partition = PartitionReplicas(us.Partition, l.replicas)
	if us.MaxSurge != nil && !us.Paused {
		l.maxSurge = scaledValue(*us.MaxSurge, l.replicas, true)
	}
	mu := intstr.FromString(DefaultMaxUnavailable)
	if us.MaxUnavailable != nil {
		mu = *us.MaxUnavailable
	}
	l.maxUnavailable = scaledValue(mu, l.replicas, l.maxSurge == 0)
	if spec.ScaleStrategy.MaxUnavailable != nil {
		l.scaleMaxUnavailable = scaledValue(*spec.ScaleStrategy.MaxUnavailable, l.replicas, true)
	}
	return l
}

// PartitionReplicas is how many pods a partition keeps at the current
// revision (behaviour §1.1 in docs/openkruise-behaviour.md, v1.2 seed): a percentage rounds up, except that a
// percentage other than 100% never keeps every one of more than one replica.
func PartitionReplicas(partition *intstr.IntOrString, replicas int) int {
	if partition == nil {
		return 0
	}
	n := scaledValue(*partition, replicas, true)
	if partition.Type == intstr.String && replicas > 1 && n >= replicas && partition.StrVal != "100%" {
		n = replicas - 1
	}
	return min(max(n, 0), replicas)
}

// scaledValue resolves an int-or-percent against total; a malformed value
// (rejected at admission) counts as 0.
func scaledValue(v intstr.IntOrString, total int, roundUp bool) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// podCounts classifies the active pods of a CloneSet for one sync.
type podCounts struct {
	total, newTotal, oldTotal int
	// active pods exclude those in PreparingDelete.
	newActive, oldActive       int
	newPreDelete, oldPreDelete int
	// toDelete: active pods marked specified-delete.
	newToDelete, oldToDelete int
	// unavailable: active, not specified-delete, not available.
	newUnavailable, oldUnavailable int
}

func (c podCounts) preDelete() int   { return c.newPreDelete + c.oldPreDelete }
func (c podCounts) toDelete() int    { return c.newToDelete + c.oldToDelete }
func (c podCounts) unavailable() int { return c.newUnavailable + c.oldUnavailable }

// podFacts is what the diff needs to know about a pod.
type podFacts struct {
	updated         bool
	preparingDelete bool
	specifiedDelete bool
	available       bool
}

func countPods(facts []podFacts) podCounts {
	var c podCounts
	c.total = len(facts)
	for _, f := range facts {
		newRev := f.updated
		switch {
		case f.preparingDelete:
			inc(newRev, &c.newPreDelete, &c.oldPreDelete)
		case f.specifiedDelete:
			inc(newRev, &c.newActive, &c.oldActive)
			inc(newRev, &c.newToDelete, &c.oldToDelete)
		default:
			inc(newRev, &c.newActive, &c.oldActive)
			if !f.available {
				inc(newRev, &c.newUnavailable, &c.oldUnavailable)
			}
		}
		inc(newRev, &c.newTotal, &c.oldTotal)
	}
	return c
}

func inc(first bool, a, b *int) {
	if first {
		*a++
	} else {
		*b++
	}
}

// diffs is what one sync should do, as OpenKruise's
// calculateDiffsWithExpectation decides it.
type diffs struct {
	// scaleUp > 0: pods to create (at most scaleUpLimit in this pass), of which
	// scaleUpOld at the current revision. scaleDown > 0: pods to remove, of
	// which at least scaleDownOld from the current revision.
	scaleUp, scaleUpOld, scaleUpLimit int
	scaleDown, scaleDownOld           int
	// deleteReadyLimit bounds how many available pods scale-down and specified
	// deletes may remove in this pass.
	deleteReadyLimit int
	// useSurge pods beyond replicas are allowed in this pass, useSurgeOld of
	// them at the current revision.
	useSurge, useSurgeOld int
	// updateNum > 0: pods to move to the update revision; < 0: pods to move
	// back to the current revision (CloneSetPartitionRollback).
	updateNum int
	// updateMaxUnavailable bounds unavailable pods while updating.
	updateMaxUnavailable int
}

// diffInput is the state calculateDiffs works on.
type diffInput struct {
	limits limits
	counts podCounts
	// sameRevision: current and update revision are the same.
	sameRevision bool
	// rollback: gate CloneSetPartitionRollback.
	rollback bool
	// excludePreparingDelete: PreparingDelete pods do not count towards
	// replicas (label apps.kruise.io/cloneset-scaling-exclude-preparing-delete).
	excludePreparingDelete bool
}

// calculateDiffs decides the scale and update numbers of one sync. Surge is
// spent either on replacing specified-delete pods before deleting them or on
// updating, never both in one pass, because a pass never scales and updates.
func calculateDiffs(in diffInput) diffs {
	l, c := in.limits, in.counts
	var d diffs

	updateOldDiff := c.oldActive - l.partition
	updateNewDiff := c.newActive - (l.replicas - l.partition)
	totalUnavailable := c.preDelete() + c.unavailable()
	if in.sameRevision || !in.rollback {
		updateOldDiff = max(updateOldDiff, 0)
		updateNewDiff = min(updateNewDiff, 0)
	}

	if l.maxSurge > 0 {
		var scaleSurge, scaleOldSurge int
		if toDelete := c.toDelete(); toDelete > 0 {
			scaleSurge = min(max(c.unavailable()+toDelete+c.preDelete()-l.maxUnavailable, 0), toDelete)
			if scaleSurge > c.newToDelete {
				scaleOldSurge = scaleSurge - c.newToDelete
			}
		}
		var updateSurge, updateOldSurge int
		if (updateOldDiff > 0 && updateNewDiff < 0) || (updateOldDiff < 0 && updateNewDiff > 0) {
			if abs(updateOldDiff) <= abs(updateNewDiff) {
				updateSurge = abs(updateOldDiff)
				if updateOldDiff < 0 {
					updateOldSurge = updateSurge
				}
			} else {
				updateSurge = abs(updateNewDiff)
				if updateNewDiff > 0 {
					updateOldSurge = updateSurge
				}
			}
		}
		if scaleSurge >= updateSurge {
			d.useSurge = min(l.maxSurge, scaleSurge)
			d.useSurgeOld = min(d.useSurge, scaleOldSurge)
		} else {
			d.useSurge = min(l.maxSurge, updateSurge)
			d.useSurgeOld = min(d.useSurge, updateOldSurge)
		}
	}

	counted, oldCounted := c.total, c.oldTotal
	if in.excludePreparingDelete {
		counted -= c.preDelete()
		oldCounted -= c.oldPreDelete
	}
	scale := l.replicas + d.useSurge - counted
	switch {
	case scale > 0:
		d.scaleUp = scale
		d.scaleUpOld = max(l.partition+d.useSurgeOld-oldCounted, 0)
		d.scaleUpLimit = scale
		if l.scaleMaxUnavailable >= 0 {
			d.scaleUpLimit = min(scale, max(l.scaleMaxUnavailable-totalUnavailable, 0))
		}
		d.scaleUpOld = min(d.scaleUpOld, d.scaleUpLimit)
	case scale < 0:
		d.scaleDown = -scale
		d.scaleDownOld = max(oldCounted-l.partition-d.useSurgeOld, 0)
	}

	if c.toDelete() > 0 || d.scaleDown > 0 {
		d.deleteReadyLimit = max(l.maxUnavailable+(c.total-l.replicas)-totalUnavailable, 0)
	}

	if abs(updateOldDiff) <= abs(updateNewDiff) {
		d.updateNum = updateOldDiff
	} else {
		d.updateNum = -updateNewDiff
	}
	if d.updateNum != 0 {
		d.updateMaxUnavailable = l.maxUnavailable + c.total - l.replicas
	}
	return d
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// facts gathers the diff's view of each pod.
func (s *syncState) facts(now time.Time) []podFacts {
	out := make([]podFacts, 0, len(s.pods))
	for _, p := range s.pods {
		out = append(out, podFacts{
			updated:         s.isUpdated(p),
			preparingDelete: isPreparingDelete(p),
			specifiedDelete: s.isSpecifiedDelete(p),
			available:       podutil.IsWorkloadAvailable(p, s.cs.Spec.MinReadySeconds, now),
		})
	}
	return out
}

func isPreparingDelete(p *corev1.Pod) bool {
	return pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey]) == pub.LifecycleStatePreparingDelete
}

// diffInput gathers what calculateDiffs needs from the sync state.
func (st *syncState) diffInput() diffInput {
	return diffInput{
		limits:                 resolveLimits(&st.cs.Spec),
		counts:                 countPods(st.facts(st.now)),
		sameRevision:           st.Current.Name == st.Update.Name,
		rollback:               st.rollback,
		excludePreparingDelete: st.cs.Labels[pub.CloneSetScalingExcludePreparingDeleteKey] == "true",
	}
}
