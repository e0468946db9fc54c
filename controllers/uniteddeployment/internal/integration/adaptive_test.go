package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The Adaptive strategy: the first subset's zone has no node, so its pods stay unscheduled; once they have waited
// rescheduleCriticalSeconds the subset is marked unschedulable (Schedulable=False) and its replicas move to the
// next subset, where they run.
func TestAdaptiveMovesUnschedulablePods(t *testing.T) {
	h := newHarness(t)
	nodesB := h.zoneNodes("b", 1) // zone a has no node
	h.startController()
	ud := deploymentUD("elastic", 3, h.zoneSubset("a", "a", nil), h.zoneSubset("b", "b", nil))
	ud.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{
		Type:     appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{RescheduleCriticalSeconds: ptr.To[int32](2)},
	}
	ud = h.uds.Create(ud)
	// In order: zone a first (no maxReplicas), where nothing can run.
	h.waitDeployments(ud, "zone a asked for 3", func(m map[string]appsv1.Deployment) bool {
		return ptr.Deref(m["a"].Spec.Replicas, 0) == 3
	})
	ud = h.uds.WaitFor(ud.Name, "3 pods ready in zone b", settled(3))
	assert.Equal(t, map[string]int32{"a": 0, "b": 3}, ud.Status.SubsetReplicas)
	for _, p := range h.Pods("app=elastic") {
		assert.Contains(t, nodesB, p.Spec.NodeName, p.Name)
	}
	a := ud.Status.SubsetStatuses[0]
	if assert.Len(t, a.Conditions, 1) {
		c := a.Conditions[0]
		assert.Equal(t, appsv1alpha1.UnitedDeploymentSubsetSchedulable, c.Type)
		assert.Equal(t, corev1.ConditionFalse, c.Status)
		assert.Equal(t, "reschedule", c.Reason)
		assert.Equal(t, "timeout pending pods found", c.Message)
	}
}
