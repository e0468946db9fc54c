package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestNeedsUpdate(t *testing.T) {
	obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{appsv1alpha1.UnitedDeploymentRevisionLabelKey: "r1"},
		Annotations: map[string]string{appsv1alpha1.AnnotationSubsetPatchKey: "p"}}}
	o := Observed{Obj: obj, SpecReplicas: 3, SpecPartition: 1}
	cases := []struct {
		name                string
		o                   Observed
		rev                 string
		replicas, partition int32
		patch, want         string
	}{
		{"nothing", o, "r1", 3, 1, "p", ""},
		{"revision", o, "r2", 3, 1, "p", "revision changed"},
		{"replicas", o, "r1", 4, 1, "p", "replicas changed"},
		{"partition", o, "r1", 3, 0, "p", "partition changed"},
		{"no partition to compare", Observed{Obj: obj, SpecReplicas: 3, NoPartition: true}, "r1", 3, 2, "p", ""},
		{"patch", o, "r1", 3, 1, "q", "patch changed"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, NeedsUpdate(c.o, c.rev, c.replicas, c.partition, c.patch), c.name)
	}
}

func TestClassify(t *testing.T) {
	at := func(name, subset string, kind Kind, sec int64) Observed {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}}
		return Observed{Kind: kind, Obj: d, SubsetName: subset}
	}
	keep, stale := Classify(baseUD(), KindDeployment, []Observed{
		at("a-new", "a", KindDeployment, 20), at("a-old", "a", KindDeployment, 10), at("b", "b", KindDeployment, 5),
		at("cs", "a", KindCloneSet, 1), at("unnamed", "", KindDeployment, 1),
	})
	assert.Equal(t, "a-old", keep["a"].Obj.GetName(), "the oldest of duplicates is kept")
	assert.Equal(t, "b", keep["b"].Obj.GetName())
	assert.Len(t, keep, 2)
	var names []string
	for _, o := range stale {
		names = append(names, o.Obj.GetName())
	}
	assert.ElementsMatch(t, []string{"a-new", "cs"}, names, "duplicates and other kinds go; a workload without subset name is left alone")
}

// planSubsets joins the Adaptive check, the split and the partitions as sync uses them.
func TestPlanSubsets(t *testing.T) {
	now := time.Unix(10000, 0)
	existing := func(name string, spec, replicas, ready int32) Observed {
		return Observed{Kind: KindDeployment, Obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}}, SubsetName: name,
			SpecReplicas: spec, Replicas: replicas, ReadyReplicas: ready}
	}
	stuck := []*corev1.Pod{pendingPod(now.Add(-time.Minute), true)} // unscheduled for longer than the 30s default
	manual := func(ud *appsv1alpha1.UnitedDeployment) *appsv1alpha1.UnitedDeployment {
		ud.Spec.UpdateStrategy = appsv1alpha1.UnitedDeploymentUpdateStrategy{Type: appsv1alpha1.ManualUpdateStrategyType,
			ManualUpdate: &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 5}}}
		return ud
	}
	cases := []struct {
		name        string
		ud          *appsv1alpha1.UnitedDeployment
		subsets     map[string]Observed
		pods        map[string][]*corev1.Pod
		replicas    map[string]int32
		partitions  map[string]int32
		schedulable map[string]corev1.ConditionStatus // Adaptive only: the Schedulable condition per subset
		recheck     time.Duration
		wantErr     string
	}{
		{name: "fixed: the remainder stays where most replicas are, partitions capped",
			ud:       manual(udWith(ptr.To[int32](3), sub("a", ""), sub("b", ""))),
			subsets:  map[string]Observed{"a": existing("a", 2, 2, 2), "b": existing("b", 1, 1, 1)},
			replicas: map[string]int32{"a": 2, "b": 1}, partitions: map[string]int32{"a": 2, "b": 0}},
		{name: "adaptive: an unschedulable subset keeps its ready pods, the rest moves on",
			ud:      adaptive(udWith(ptr.To[int32](4), subMinMax("a", "", "3"), subMinMax("b", "", ""))),
			subsets: map[string]Observed{"a": existing("a", 3, 3, 1)}, pods: map[string][]*corev1.Pod{"a": stuck},
			replicas: map[string]int32{"a": 1, "b": 3}, partitions: map[string]int32{"a": 0, "b": 0},
			schedulable: map[string]corev1.ConditionStatus{"a": corev1.ConditionFalse}, recheck: defaultUnschedulableFor},
		{name: "impossible split", ud: udWith(ptr.To[int32](2), sub("a", "3"), sub("b", "")),
			wantErr: "specified subsets' replica (3) is greater than UnitedDeployment replica (2)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := planSubsets(c.ud, c.subsets, func(o Observed) []*corev1.Pod { return c.pods[o.SubsetName] }, now)
			if c.wantErr != "" {
				assert.EqualError(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.replicas, p.replicas)
			assert.Equal(t, c.partitions, p.partitions)
			assert.Equal(t, c.recheck, p.recheck)
			if c.schedulable == nil {
				assert.Nil(t, p.conditions)
			}
			for name, status := range c.schedulable {
				if cond := subsetCondition(p.conditions[name], appsv1alpha1.UnitedDeploymentSubsetSchedulable); assert.NotNil(t, cond, name) {
					assert.Equal(t, status, cond.Status, name)
				}
			}
		})
	}
}
