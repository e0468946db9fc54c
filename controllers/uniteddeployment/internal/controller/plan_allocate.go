package controller

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// ParseSubsetReplicas resolves a subset's replicas (or min/max replicas): an integer as is, a percentage of the
// UnitedDeployment's replicas rounded half up. udReplicas < 0 means spec.replicas is unset, where percentages
// have no meaning.
func ParseSubsetReplicas(udReplicas int32, v intstr.IntOrString) (int32, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("subset replicas (%d) should not be less than 0", v.IntVal)
		}
		return v.IntVal, nil
	}
	if udReplicas < 0 {
		return 0, fmt.Errorf("subsetReplicas (%v) should not be string when unitedDeployment replicas is empty", v.StrVal)
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("subset replicas (%s) only support integer value or percentage value with a suffix '%%'", v.StrVal)
	}
	percent, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("subset replicas (%s) should be correct percentage integer: %w", v.StrVal, err)
	}
	if percent < 0 || percent > 100 {
		return 0, fmt.Errorf("subset replicas (%s) should be in range [0, 100]", v.StrVal)
	}
	return int32(math.Floor(float64(udReplicas)*float64(percent)/100 + 0.5)), nil
}

// SubsetState is what the Adaptive strategy knows of an existing subset workload.
type SubsetState struct {
	ReadyReplicas int32
	// Unschedulable: the subset has pods pending unscheduled for longer than rescheduleCriticalSeconds, or had
	// within the last unschedulableDuration (see Schedulability).
	Unschedulable bool
}

// Allocate computes the replicas of every subset of ud. current holds the spec.replicas of the existing subset
// workloads by subset name: with fixed replicas it decides which subsets get the remainder of an uneven split.
// states (Adaptive strategy only) holds the existing subsets' ready replicas and schedulability.
//
// Subsets with min/max replicas are filled in order, first up to each minimum, then up to each maximum. Otherwise
// subsets with replicas get them (integers, or percentages of spec.replicas) and the rest is spread evenly over the
// subsets without, the remainder going one each to those that currently have the most replicas (then the
// alphabetically last): so a scale-up or scale-down moves as few pods as possible.
//
// The error says why the split is impossible (e.g. the fixed replicas add up to more than spec.replicas); the
// API server rejects such specs, so it only happens with a spec admitted before the rules existed.
//
// With the Adaptive strategy the bounds move with what runs: an unschedulable subset keeps exactly its ready pods
// (min and max clamped to them), so the rest goes to the next subsets; a schedulable one never drops below its
// ready pods (within its max), so healthy pods are not deleted to move them back.
func Allocate(ud *appsv1alpha1.UnitedDeployment, current map[string]int32, states map[string]SubsetState) (map[string]int32, error) {
	if ud.Spec.Topology.ScheduleStrategy.Type == appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType {
		return allocateAdaptive(ud, states)
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if s.MinReplicas != nil || s.MaxReplicas != nil {
			return allocateMinMax(ud)
		}
	}
	return allocateSpecified(ud, current)
}

func allocateSpecified(ud *appsv1alpha1.UnitedDeployment, current map[string]int32) (map[string]int32, error) {
	expected := int32(-1)
	if ud.Spec.Replicas != nil {
		expected = *ud.Spec.Replicas
	}
	subsets := ud.Spec.Topology.Subsets
	specified := map[string]int32{}
	var specifiedSum int32
	for _, s := range subsets {
		if s.Replicas == nil {
			continue
		}
		// As OpenKruise: a subset whose value cannot be parsed counts as unspecified.
		if r, err := ParseSubsetReplicas(expected, *s.Replicas); err == nil {
			specified[s.Name] = r
			specifiedSum += r
		}
	}
	switch {
	case expected < 0 && len(specified) != len(subsets):
		return nil, fmt.Errorf("all subsets must be specified when UnitedDeployment replica is unspecified")
	case expected >= 0 && specifiedSum > expected:
		return nil, fmt.Errorf("specified subsets' replica (%d) is greater than UnitedDeployment replica (%d)", specifiedSum, expected)
	case expected >= 0 && specifiedSum < expected && len(specified) == len(subsets):
		return nil, fmt.Errorf("specified subsets' replica (%d) is less than UnitedDeployment replica (%d)", specifiedSum, expected)
	}

	out := make(map[string]int32, len(subsets))
	var rest []string
	for _, s := range subsets {
		if r, ok := specified[s.Name]; ok {
			out[s.Name] = r
		} else {
			rest = append(rest, s.Name)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	// The remainder goes to the subsets that hold the most replicas now (ties: the last name).
	sort.SliceStable(rest, func(i, j int) bool {
		if current[rest[i]] != current[rest[j]] {
			return current[rest[i]] > current[rest[j]]
		}
		return rest[i] > rest[j]
	})
	left := expected - specifiedSum
	avg, rem := left/int32(len(rest)), left%int32(len(rest))
	for i, name := range rest {
		out[name] = avg
		if int32(i) < rem {
			out[name]++
		}
	}
	return out, nil
}

func allocateMinMax(ud *appsv1alpha1.UnitedDeployment) (map[string]int32, error) {
	replicas, mins, maxs, err := minMaxBounds(ud)
	if err != nil {
		return nil, err
	}
	return fillMinMax(ud.Spec.Topology.Subsets, replicas, mins, maxs), nil
}

func allocateAdaptive(ud *appsv1alpha1.UnitedDeployment, states map[string]SubsetState) (map[string]int32, error) {
	replicas, mins, maxs, err := minMaxBounds(ud)
	if err != nil {
		return nil, err
	}
	for i, s := range ud.Spec.Topology.Subsets {
		st, exists := states[s.Name]
		if st.Unschedulable && exists {
			mins[i] = max(st.ReadyReplicas, mins[i])
			maxs[i] = min(st.ReadyReplicas, maxs[i])
		}
		// Healthy pods stay where they run.
		if !st.Unschedulable && st.ReadyReplicas > mins[i] {
			mins[i] = min(st.ReadyReplicas, maxs[i])
		}
	}
	return fillMinMax(ud.Spec.Topology.Subsets, replicas, mins, maxs), nil
}

// minMaxBounds resolves spec.replicas (0 if unset) and every subset's min (0 if unset) and max (no limit if unset);
// an unparsable bound counts as 0, as in OpenKruise.
func minMaxBounds(ud *appsv1alpha1.UnitedDeployment) (replicas int32, mins, maxs []int32, err error) {
	if ud.Spec.Replicas != nil {
		replicas = *ud.Spec.Replicas
	}
	subsets := ud.Spec.Topology.Subsets
	mins = make([]int32, len(subsets))
	maxs = make([]int32, len(subsets))
	for i, s := range subsets {
		mins[i], maxs[i] = 0, math.MaxInt32
		if s.MinReplicas != nil {
			mins[i], _ = ParseSubsetReplicas(replicas, *s.MinReplicas)
		}
		if s.MaxReplicas != nil {
			maxs[i], _ = ParseSubsetReplicas(replicas, *s.MaxReplicas)
		}
		if mins[i] > maxs[i] {
			return 0, nil, nil, fmt.Errorf("subset[%d].maxReplicas(%d) must be more than or equal to minReplicas(%d)", i, maxs[i], mins[i])
		}
	}
	return replicas, mins, maxs, nil
}

// fillMinMax fills the subsets in order, first up to each minimum, then up to each maximum.
func fillMinMax(subsets []appsv1alpha1.Subset, replicas int32, mins, maxs []int32) map[string]int32 {
	out := make(map[string]int32, len(subsets))
	var allocated int32
	for i, s := range subsets {
		add := max(min(mins[i], replicas-allocated), 0)
		out[s.Name] = add
		allocated += add
	}
	for i, s := range subsets {
		if allocated >= replicas {
			break
		}
		add := max(min(maxs[i]-mins[i], replicas-allocated), 0)
		out[s.Name] += add
		allocated += add
	}
	return out
}

// Partitions returns each subset's partition: the Manual strategy's value for it (0 without one), at most the
// subset's replicas.
func Partitions(ud *appsv1alpha1.UnitedDeployment, replicas map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(ud.Spec.Topology.Subsets))
	var set map[string]int32
	if ud.Spec.UpdateStrategy.Type == appsv1alpha1.ManualUpdateStrategyType && ud.Spec.UpdateStrategy.ManualUpdate != nil {
		set = ud.Spec.UpdateStrategy.ManualUpdate.Partitions
	}
	for _, s := range ud.Spec.Topology.Subsets {
		p := set[s.Name]
		if r, ok := replicas[s.Name]; ok && p > r {
			p = r
		}
		out[s.Name] = p
	}
	return out
}
