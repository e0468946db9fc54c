package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestCalculateStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	outcomes := []outcome{
		{ns: "a", ok: true, target: true},
		{ns: "z", failed: appsv1alpha1.ResourceDistributionConflictOccurred, reason: reasonConflict, target: true},
		{ns: "c", failed: appsv1alpha1.ResourceDistributionConflictOccurred, reason: reasonConflict, target: true},
		{ns: "gone", failed: appsv1alpha1.ResourceDistributionNamespaceNotExists, reason: reasonNotExist, target: true},
		{ns: "later", target: true}, // deferred: neither succeeded nor a condition
		{ns: "old", ok: true},       // a deletion: not a target
		{ns: "old2", failed: appsv1alpha1.ResourceDistributionDeleteResourceFailed, reason: "boom"},
	}
	st := calculateStatus(&appsv1alpha1.ResourceDistributionStatus{}, 7, 5, outcomes, t0)
	assert.Equal(t, int32(5), st.Desired)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(4), st.Failed)
	assert.Equal(t, int64(7), st.ObservedGeneration)
	types := []appsv1alpha1.ResourceDistributionConditionType{}
	for _, c := range st.Conditions {
		types = append(types, c.Type)
	}
	assert.Equal(t, conditionOrder, types)
	conflict := st.Conditions[4]
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionTrue, conflict.Status)
	assert.Equal(t, []string{"c", "z"}, conflict.FailedNamespaces)
	assert.Equal(t, reasonConflict, conflict.Reason)
	assert.Equal(t, []string{"old2"}, st.Conditions[3].FailedNamespaces)
	assert.Equal(t, "boom", st.Conditions[3].Reason)
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, reasonSucceeded, st.Conditions[0].Reason)

	// The same outcomes later: nothing changes, so nothing is written.
	again := calculateStatus(&st, 7, 5, outcomes, t1)
	assert.True(t, equality.Semantic.DeepEqual(st, again), "a status write happens only when it differs")
	// The conflict resolved: only that condition moves, with a new transition time.
	resolved := calculateStatus(&st, 7, 5, append([]outcome{{ns: "c", ok: true, target: true}, {ns: "z", ok: true, target: true}}, outcomes[3:]...), t1)
	assert.False(t, equality.Semantic.DeepEqual(st, resolved))
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionFalse, resolved.Conditions[4].Status)
	assert.Equal(t, t1, resolved.Conditions[4].LastTransitionTime)
	assert.Equal(t, t0, resolved.Conditions[5].LastTransitionTime)
}
