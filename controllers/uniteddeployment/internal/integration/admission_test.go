package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// The checks of OpenKruise's UnitedDeployment webhook that need no other object are the API server's own: each
// bad spec is refused with a message naming the field.
func TestAdmissionRefusesBadSpecs(t *testing.T) {
	h := newHarness(t)
	ok := func(mutate func(*appsv1alpha1.UnitedDeployment)) *appsv1alpha1.UnitedDeployment {
		ud := deploymentUD("bad", 4, h.zoneSubset("a", "a", nil), h.zoneSubset("b", "b", nil))
		ud.GenerateName, ud.Name = "bad-", ""
		mutate(ud)
		return ud
	}
	n := func(v int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(v)) }
	s := func(v string) *intstr.IntOrString { return ptr.To(intstr.FromString(v)) }
	lab.RefusedAtAdmission(t, h.Client.AppsV1alpha1().UnitedDeployments(h.NS).Create, []lab.Refusal[*appsv1alpha1.UnitedDeployment]{
		{Name: "no template", Want: "spec.template: should provide exactly one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Template = appsv1alpha1.SubsetTemplate{} })},
		{Name: "two templates", Want: "spec.template: should provide exactly one of",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Template.StatefulSetTemplate = &appsv1alpha1.StatefulSetTemplateSpec{}
			})},
		{Name: "duplicate subset names", Want: "spec.topology.subsets[1]: Duplicate value",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[1].Name = "a" })},
		{Name: "subset name not a DNS label", Want: "spec.topology.subsets[0].name",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[0].Name = "Zone_A" })},
		{Name: "negative subset replicas", Want: "spec.topology.subsets[0].replicas: Invalid value",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[0].Replicas = n(-1) })},
		{Name: "percentage above 100", Want: "spec.topology.subsets[0].replicas",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Topology.Subsets[0].Replicas = s("150%") })},
		{Name: "subset replicas above spec.replicas", Want: "sum of indicated subset replicas should not be greater than UnitedDeployment replicas",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.Subsets[0].Replicas = n(3)
				u.Spec.Topology.Subsets[1].Replicas = s("50%")
			})},
		{Name: "all subsets set, sum below spec.replicas", Want: "the sum of indicated subset replicas should equal UnitedDeployment replicas",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.Subsets[0].Replicas = n(1)
				u.Spec.Topology.Subsets[1].Replicas = n(2)
			})},
		{Name: "no spec.replicas and a subset without replicas", Want: "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Replicas = nil
				u.Spec.Topology.Subsets[0].Replicas = n(1)
			})},
		{Name: "replicas and min/max together", Want: "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.Subsets[0].Replicas = n(1)
				u.Spec.Topology.Subsets[1].MaxReplicas = n(2)
			})},
		{Name: "every subset capped", Want: "at least one subset.maxReplicas must be empty",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.Subsets[0].MaxReplicas = n(1)
				u.Spec.Topology.Subsets[1].MaxReplicas = n(2)
			})},
		{Name: "min above max", Want: "subset minReplicas must be less than or equal to maxReplicas",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.Subsets[0].MinReplicas = n(3)
				u.Spec.Topology.Subsets[0].MaxReplicas = n(2)
			})},
		{Name: "partition of an unknown subset", Want: "spec.updateStrategy.manualUpdate.partitions: every key must name a subset",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"c": 1}}
			})},
		{Name: "empty selector", Want: "spec.selector: empty selector is invalid for UnitedDeployment",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Selector = &metav1.LabelSelector{} })},
		{Name: "adaptive with fixed subset replicas", Want: "specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Topology.ScheduleStrategy.Type = appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
				u.Spec.Topology.Subsets[0].Replicas = n(1)
			})},
		{Name: "reserved rescheduling of a StatefulSet", Want: "spec.topology.scheduleStrategy: only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) {
				u.Spec.Template = appsv1alpha1.SubsetTemplate{StatefulSetTemplate: &appsv1alpha1.StatefulSetTemplateSpec{}}
				u.Spec.Topology.ScheduleStrategy = appsv1alpha1.UnitedDeploymentScheduleStrategy{Type: appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
					Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{ReserveUnschedulablePods: true}}
			})},
		{Name: "negative replicas", Want: "spec.replicas",
			Object: ok(func(u *appsv1alpha1.UnitedDeployment) { u.Spec.Replicas = ptr.To[int32](-1) })},
	})

	// Accepted, and defaulted as OpenKruise's webhook defaults it.
	ud := h.uds.Create(deploymentUD("good", 4, h.zoneSubset("a", "a", s("25%")), h.zoneSubset("b", "b", nil)))
	assert.Equal(t, int32(10), *ud.Spec.RevisionHistoryLimit)
	assert.Equal(t, appsv1alpha1.ManualUpdateStrategyType, ud.Spec.UpdateStrategy.Type)
	assert.NotNil(t, ud.Spec.UpdateStrategy.ManualUpdate)

	// A subset's placement is fixed once created (OpenKruise's update check).
	_, err := h.Client.AppsV1alpha1().UnitedDeployments(h.NS).Update(t.Context(), func() *appsv1alpha1.UnitedDeployment {
		u := ud.DeepCopy()
		u.Spec.Topology.Subsets[0].NodeSelectorTerm.MatchExpressions[0].Values = []string{"elsewhere"}
		return u
	}(), metav1.UpdateOptions{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "nodeSelectorTerm may not be changed in an update")
	_, err = h.Client.AppsV1alpha1().UnitedDeployments(h.NS).Update(t.Context(), func() *appsv1alpha1.UnitedDeployment {
		u := ud.DeepCopy()
		u.Spec.Topology.Subsets[1].Tolerations = []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}
		return u
	}(), metav1.UpdateOptions{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "tolerations may not be changed in an update")
}

// A template the workload's own API refuses (pod labels the selector does not match: the templates are schemaless,
// so only the Deployment's validation sees it) is reported in the status, with the API server's message, and
// nothing is created; fixing the template provisions the subsets.
func TestRefusedTemplateIsReported(t *testing.T) {
	h := newHarness(t)
	h.startController()
	ud := deploymentUD("odd", 2, h.zoneSubset("a", "a", nil))
	ud.Spec.Template.DeploymentTemplate.Spec.Template.Labels = map[string]string{"app": "other"}
	ud = h.uds.Create(ud)
	ud = h.uds.WaitFor(ud.Name, "SubsetProvisioned=False", func(u *appsv1alpha1.UnitedDeployment) bool {
		c := condition(u, appsv1alpha1.SubsetProvisioned)
		return c != nil && c.Status == corev1.ConditionFalse
	})
	c := condition(ud, appsv1alpha1.SubsetProvisioned)
	assert.Equal(t, "Error", c.Reason)
	assert.Contains(t, c.Message, "fail to create Subset (Deployment) a")
	assert.Contains(t, c.Message, "`selector` does not match template `labels`")
	assert.Empty(t, h.deployments(ud))
	h.WaitEvent(ud.Name, "FailedUpdateSubset")
	// Permanent: not retried with back-off (a retry cannot help; a change of the spec enqueues it again). The
	// status write that reports it syncs once more, so two attempts; back-off retries would make about ten.
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := h.CountEvents(ud.Name, func(e corev1.Event) bool { return e.Reason == "FailedUpdateSubset" }); n > 2 {
			return fmt.Errorf("%d FailedUpdateSubset events: the create was retried", n)
		}
		return nil
	})

	h.uds.Modify(ud.Name, func(u *appsv1alpha1.UnitedDeployment) {
		u.Spec.Template.DeploymentTemplate.Spec.Template.Labels = map[string]string{"app": "odd"}
	})
	h.uds.WaitFor(ud.Name, "SubsetProvisioned=True", func(u *appsv1alpha1.UnitedDeployment) bool {
		c := condition(u, appsv1alpha1.SubsetProvisioned)
		return c != nil && c.Status == corev1.ConditionTrue && len(h.deployments(u)) == 1
	})
}
