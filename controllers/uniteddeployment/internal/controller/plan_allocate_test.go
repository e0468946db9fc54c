package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func ios(v string) *intstr.IntOrString { x := intstr.Parse(v); return &x }

func udWith(replicas *int32, subsets ...appsv1alpha1.Subset) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{}
	ud.Spec.Replicas = replicas
	ud.Spec.Topology.Subsets = subsets
	return ud
}

func sub(name string, replicas string) appsv1alpha1.Subset {
	s := appsv1alpha1.Subset{Name: name}
	if replicas != "" {
		s.Replicas = ios(replicas)
	}
	return s
}

func subMinMax(name, minR, maxR string) appsv1alpha1.Subset {
	s := appsv1alpha1.Subset{Name: name}
	if minR != "" {
		s.MinReplicas = ios(minR)
	}
	if maxR != "" {
		s.MaxReplicas = ios(maxR)
	}
	return s
}

func TestParseSubsetReplicas(t *testing.T) {
	cases := []struct {
		ud      int32
		v       string
		want    int32
		wantErr bool
	}{
		{ud: 10, v: "3", want: 3},
		{ud: -1, v: "3", want: 3},
		{ud: 10, v: "30%", want: 3},
		{ud: 5, v: "50%", want: 3}, // 2.5 rounds half up
		{ud: 5, v: "30%", want: 2}, // 1.5 rounds up
		{ud: 5, v: "20%", want: 1}, // exact
		{ud: 3, v: "33%", want: 1}, // 0.99
		{ud: 10, v: "100%", want: 10},
		{ud: 10, v: "0%", want: 0},
		{ud: -1, v: "30%", wantErr: true}, // percentage without spec.replicas
		{ud: 10, v: "101%", wantErr: true},
		{ud: 10, v: "30", want: 30},
		{ud: 10, v: "x%", wantErr: true},
		{ud: 10, v: "3x", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseSubsetReplicas(c.ud, intstr.Parse(c.v))
		if c.wantErr {
			assert.Error(t, err, "%d %s", c.ud, c.v)
			continue
		}
		require.NoError(t, err, "%d %s", c.ud, c.v)
		assert.Equal(t, c.want, got, "%d %s", c.ud, c.v)
	}
	_, err := ParseSubsetReplicas(10, intstr.FromInt32(-1))
	assert.Error(t, err)
}

// The cases follow OpenKruise's allocator tests: fixed values, percentages, the rest spread over the subsets
// without a value with the remainder going to the subsets that currently hold the most replicas (ties: the last
// name), and the impossible splits.
func TestAllocate(t *testing.T) {
	cases := []struct {
		name    string
		ud      *appsv1alpha1.UnitedDeployment
		current map[string]int32
		want    map[string]int32
		wantErr string
	}{
		// As OpenKruise: with no subsets at all, nothing can take the replicas.
		{name: "no subsets", ud: udWith(ptr.To[int32](3)), wantErr: "specified subsets' replica (0) is less than UnitedDeployment replica (3)"},
		{name: "even split", ud: udWith(ptr.To[int32](6), sub("a", ""), sub("b", ""), sub("c", "")),
			want: map[string]int32{"a": 2, "b": 2, "c": 2}},
		{name: "remainder to the last names when all are equal", ud: udWith(ptr.To[int32](5), sub("a", ""), sub("b", ""), sub("c", "")),
			want: map[string]int32{"a": 1, "b": 2, "c": 2}},
		{name: "remainder to the subsets holding the most now", ud: udWith(ptr.To[int32](5), sub("a", ""), sub("b", ""), sub("c", "")),
			current: map[string]int32{"a": 4, "b": 0, "c": 1}, want: map[string]int32{"a": 2, "b": 1, "c": 2}},
		{name: "fixed and the rest", ud: udWith(ptr.To[int32](10), sub("a", "2"), sub("b", ""), sub("c", "")),
			want: map[string]int32{"a": 2, "b": 4, "c": 4}},
		{name: "percentage and the rest", ud: udWith(ptr.To[int32](10), sub("a", "30%"), sub("b", ""), sub("c", "")),
			want: map[string]int32{"a": 3, "b": 3, "c": 4}},
		{name: "percentage rounds half up", ud: udWith(ptr.To[int32](5), sub("a", "50%"), sub("b", "")),
			want: map[string]int32{"a": 3, "b": 2}},
		{name: "all fixed summing to replicas", ud: udWith(ptr.To[int32](5), sub("a", "2"), sub("b", "3")),
			want: map[string]int32{"a": 2, "b": 3}},
		{name: "all fixed without spec.replicas", ud: udWith(nil, sub("a", "2"), sub("b", "3")),
			want: map[string]int32{"a": 2, "b": 3}},
		{name: "fixed subsets leave nothing for the rest", ud: udWith(ptr.To[int32](4), sub("a", "4"), sub("b", "")),
			want: map[string]int32{"a": 4, "b": 0}},
		{name: "zero replicas", ud: udWith(ptr.To[int32](0), sub("a", ""), sub("b", "")),
			want: map[string]int32{"a": 0, "b": 0}},
		{name: "fixed sum above replicas", ud: udWith(ptr.To[int32](4), sub("a", "3"), sub("b", "2"), sub("c", "")),
			wantErr: "specified subsets' replica (5) is greater than UnitedDeployment replica (4)"},
		{name: "all fixed below replicas", ud: udWith(ptr.To[int32](6), sub("a", "3"), sub("b", "2")),
			wantErr: "specified subsets' replica (5) is less than UnitedDeployment replica (6)"},
		{name: "no spec.replicas and a subset without", ud: udWith(nil, sub("a", "3"), sub("b", "")),
			wantErr: "all subsets must be specified when UnitedDeployment replica is unspecified"},
		{name: "no spec.replicas and a percentage", ud: udWith(nil, sub("a", "3"), sub("b", "50%")),
			wantErr: "all subsets must be specified when UnitedDeployment replica is unspecified"},
		{name: "min first, then max, in order", ud: udWith(ptr.To[int32](5), subMinMax("a", "2", "4"), subMinMax("b", "2", "")),
			want: map[string]int32{"a": 3, "b": 2}},
		{name: "min not reachable", ud: udWith(ptr.To[int32](3), subMinMax("a", "2", "4"), subMinMax("b", "2", "")),
			want: map[string]int32{"a": 2, "b": 1}},
		{name: "max caps and the rest overflows", ud: udWith(ptr.To[int32](10), subMinMax("a", "", "3"), subMinMax("b", "", "")),
			want: map[string]int32{"a": 3, "b": 7}},
		{name: "min/max percentages", ud: udWith(ptr.To[int32](10), subMinMax("a", "20%", "50%"), subMinMax("b", "", "")),
			want: map[string]int32{"a": 5, "b": 5}},
		{name: "min above max", ud: udWith(ptr.To[int32](10), subMinMax("a", "5", "3"), subMinMax("b", "", "")),
			wantErr: "subset[0].maxReplicas(3) must be more than or equal to minReplicas(5)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Allocate(c.ud, c.current, nil)
			if c.wantErr != "" {
				assert.EqualError(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestPartitions(t *testing.T) {
	ud := udWith(ptr.To[int32](6), sub("a", ""), sub("b", ""), sub("c", ""))
	ud.Spec.UpdateStrategy = appsv1alpha1.UnitedDeploymentUpdateStrategy{Type: appsv1alpha1.ManualUpdateStrategyType,
		ManualUpdate: &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "b": 9}}}
	got := Partitions(ud, map[string]int32{"a": 2, "b": 2, "c": 2})
	assert.Equal(t, map[string]int32{"a": 1, "b": 2, "c": 0}, got, "capped at the subset's replicas, 0 without a value")

	ud.Spec.UpdateStrategy.Type = ""
	assert.Equal(t, map[string]int32{"a": 0, "b": 0, "c": 0}, Partitions(ud, map[string]int32{"a": 2, "b": 2, "c": 2}),
		"only the Manual strategy sets partitions")
}

func adaptive(ud *appsv1alpha1.UnitedDeployment) *appsv1alpha1.UnitedDeployment {
	ud.Spec.Topology.ScheduleStrategy.Type = appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
	return ud
}

// The Adaptive strategy, as OpenKruise's adaptiveAllocator: the bounds follow the subsets' ready pods and
// schedulability.
func TestAllocateAdaptive(t *testing.T) {
	cases := []struct {
		name   string
		ud     *appsv1alpha1.UnitedDeployment
		states map[string]SubsetState
		want   map[string]int32
	}{
		{name: "no state yet: in order, up to each max",
			ud:   adaptive(udWith(ptr.To[int32](5), subMinMax("a", "", "3"), subMinMax("b", "", ""))),
			want: map[string]int32{"a": 3, "b": 2}},
		{name: "unschedulable subset keeps its ready pods, the rest moves on",
			ud:     adaptive(udWith(ptr.To[int32](5), subMinMax("a", "", "3"), subMinMax("b", "", ""))),
			states: map[string]SubsetState{"a": {ReadyReplicas: 1, Unschedulable: true}, "b": {ReadyReplicas: 2}},
			want:   map[string]int32{"a": 1, "b": 4}},
		{name: "unschedulable with nothing ready: everything elsewhere",
			ud:     adaptive(udWith(ptr.To[int32](4), subMinMax("a", "2", ""), subMinMax("b", "", ""))),
			states: map[string]SubsetState{"a": {Unschedulable: true}},
			want:   map[string]int32{"a": 2, "b": 2}}, // as OpenKruise: its minReplicas still holds
		{name: "healthy pods are not moved back",
			ud:     adaptive(udWith(ptr.To[int32](5), subMinMax("a", "", "3"), subMinMax("b", "", ""))),
			states: map[string]SubsetState{"a": {ReadyReplicas: 1}, "b": {ReadyReplicas: 4}},
			want:   map[string]int32{"a": 1, "b": 4}},
		{name: "an unschedulable subset that does not exist yet is treated as schedulable",
			ud:     adaptive(udWith(ptr.To[int32](3), subMinMax("a", "", ""), subMinMax("b", "", ""))),
			states: map[string]SubsetState{},
			want:   map[string]int32{"a": 3, "b": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Allocate(c.ud, nil, c.states)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}
