package controller

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Classify splits ud's workloads into the subsets to keep (of the template's kind, one per subset name, the
// oldest when there are several) and the ones to delete: duplicates and workloads of another kind (the template
// changed kind). Workloads of the right kind without a subset name are left alone, as OpenKruise leaves them.
// Subsets no longer in the topology are kept here; provision deletes them.
func Classify(ud *appsv1alpha1.UnitedDeployment, kind Kind, all []Observed) (keep map[string]Observed, stale []Observed) {
	byName := map[string][]Observed{}
	for _, o := range all {
		switch {
		case o.Kind != kind:
			stale = append(stale, o)
		case o.SubsetName != "":
			byName[o.SubsetName] = append(byName[o.SubsetName], o)
		}
	}
	keep = map[string]Observed{}
	for name, objs := range byName {
		sort.Slice(objs, func(i, j int) bool {
			ti, tj := objs[i].Obj.GetCreationTimestamp(), objs[j].Obj.GetCreationTimestamp()
			if !ti.Equal(&tj) {
				return ti.Before(&tj)
			}
			return objs[i].Obj.GetName() < objs[j].Obj.GetName()
		})
		keep[name] = objs[0]
		stale = append(stale, objs[1:]...)
	}
	return keep, stale
}

// subsetPlan is what a sync decided for the subsets of the topology.
type subsetPlan struct {
	replicas   map[string]int32 // by subset name
	partitions map[string]int32
	// conditions are the subsets' new Schedulable conditions (Adaptive strategy only, else nil).
	conditions map[string][]appsv1alpha1.UnitedDeploymentSubsetCondition
	// recheck is when the Adaptive check must look again (0: no need).
	recheck time.Duration
}

// planSubsets decides every subset's replicas and partition: with the Adaptive strategy after its schedulability
// check of the existing subsets (whose pods podsOf returns). The error says why the split is impossible (see
// Allocate).
func planSubsets(ud *appsv1alpha1.UnitedDeployment, subsets map[string]Observed, podsOf func(Observed) []*corev1.Pod,
	now time.Time) (subsetPlan, error) {
	replicasNow := map[string]int32{}
	for name, o := range subsets {
		replicasNow[name] = o.SpecReplicas
	}
	var p subsetPlan
	var states map[string]SubsetState
	states, p.conditions, p.recheck = adaptiveStates(ud, subsets, podsOf, now)
	next, err := Allocate(ud, replicasNow, states)
	if err != nil {
		return subsetPlan{}, err
	}
	p.replicas, p.partitions = next, Partitions(ud, next)
	return p, nil
}

// NeedsUpdate reports why a subset workload must be rewritten ("" if it need not): another revision, replicas,
// partition or patch than wanted.
func NeedsUpdate(o Observed, rev string, replicas, partition int32, patch string) string {
	switch {
	case o.Revision() != rev:
		return "revision changed"
	case o.SpecReplicas != replicas:
		return "replicas changed"
	case !o.NoPartition && o.SpecPartition != partition:
		return "partition changed"
	case o.Patch() != patch:
		return "patch changed"
	}
	return ""
}
