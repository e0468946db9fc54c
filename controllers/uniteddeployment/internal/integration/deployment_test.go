package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// A UnitedDeployment of Deployments over two zones, followed as a user would: the subsets are named, labelled,
// owned and placed as OpenKruise places them, the replicas are split (a percentage, the rest to the other
// subset), the status reports the pods kube-controller-manager and kwok run, /scale rescales, a template change
// makes a new revision that reaches every subset, and a subset removed from the topology loses its Deployment.
func TestDeploymentSubsets(t *testing.T) {
	h := newHarness(t)
	nodesA, nodesB := h.zoneNodes("a", 1), h.zoneNodes("b", 1)
	h.startController()

	ud := h.uds.Create(deploymentUD("web", 5,
		h.zoneSubset("zone-a", "a", nil),
		h.zoneSubset("zone-b", "b", ptr.To(intstr.FromString("40%")))))
	ud = h.uds.WaitFor(ud.Name, "5 pods ready and updated", settled(5))

	deps := h.deployments(ud)
	require.Len(t, deps, 2, describe(deps))
	assert.Equal(t, map[string]int32{"zone-a": 3, "zone-b": 2}, replicasOf(deps), "40%% of 5 rounds to 2, the rest to zone-a")
	assert.Equal(t, map[string]int32{"zone-a": 3, "zone-b": 2}, ud.Status.SubsetReplicas)
	rev := ud.Status.UpdateStatus.UpdatedRevision
	assert.True(t, strings.HasPrefix(rev, "web-"), rev)
	for subset, d := range deps {
		assert.True(t, strings.HasPrefix(d.Name, "web-"+subset+"-"), "generateName <ud>-<subset>-: %s", d.Name)
		assert.Equal(t, subset, d.Labels[appsv1alpha1.SubSetNameLabelKey])
		assert.Equal(t, rev, d.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey])
		assert.Equal(t, "web", d.Labels["team"], "template labels are copied")
		assert.Equal(t, map[string]string{"app": "web", appsv1alpha1.SubSetNameLabelKey: subset}, d.Spec.Selector.MatchLabels)
		assert.Equal(t, subset, d.Spec.Template.Labels[appsv1alpha1.SubSetNameLabelKey])
		assert.Equal(t, rev, d.Spec.Template.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey])
		ref := metav1.GetControllerOf(&d)
		require.NotNil(t, ref)
		assert.Equal(t, "UnitedDeployment", ref.Kind)
		assert.Equal(t, "apps.kruise.io/v1alpha1", ref.APIVersion)
		terms := d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		require.Len(t, terms, 1)
		assert.Equal(t, zoneKey, terms[0].MatchExpressions[0].Key)
	}
	// Pods run in their subset's zone.
	for _, p := range h.Pods("app=web") {
		want := nodesA
		if p.Labels[appsv1alpha1.SubSetNameLabelKey] == "zone-b" {
			want = nodesB
		}
		assert.Contains(t, want, p.Spec.NodeName, "pod %s of %s", p.Name, p.Labels[appsv1alpha1.SubSetNameLabelKey])
	}
	for _, ct := range []appsv1alpha1.UnitedDeploymentConditionType{appsv1alpha1.SubsetProvisioned, appsv1alpha1.SubsetUpdated, appsv1alpha1.UnitedDeploymentUpdated} {
		c := condition(ud, ct)
		if assert.NotNil(t, c, ct) {
			assert.Equal(t, corev1.ConditionTrue, c.Status, ct)
		}
	}
	assert.Equal(t, "updated to revision "+rev, condition(ud, appsv1alpha1.UnitedDeploymentUpdated).Message)

	// kubectl scale: the scale subresource reads spec.replicas and status.replicas/labelSelector.
	ctx := context.Background()
	scale, err := h.Client.AppsV1alpha1().UnitedDeployments(h.NS).GetScale(ctx, ud.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), scale.Status.Replicas)
	assert.Equal(t, "app=web", scale.Status.Selector)
	scale.Spec.Replicas = 7
	_, err = h.Client.AppsV1alpha1().UnitedDeployments(h.NS).UpdateScale(ctx, ud.Name, scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	ud = h.uds.WaitFor(ud.Name, "7 pods ready and updated", settled(7))
	assert.Equal(t, map[string]int32{"zone-a": 4, "zone-b": 3}, replicasOf(h.deployments(ud)), "40%% of 7 rounds to 3")

	// A template change: a new revision, written to every subset, and the rollout completes.
	ud = h.uds.Modify(ud.Name, func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Template.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = "registry.local/web:v2"
	})
	ud = h.uds.WaitFor(ud.Name, "a new revision rolled out", func(u *appsv1alpha1.UnitedDeployment) bool {
		return settled(7)(u) && u.Status.CurrentRevision != rev
	})
	rev2 := ud.Status.CurrentRevision
	for subset, d := range h.deployments(ud) {
		assert.Equal(t, rev2, d.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey], subset)
		assert.Equal(t, "registry.local/web:v2", d.Spec.Template.Spec.Containers[0].Image, subset)
	}
	assert.Len(t, h.Revisions(ud.UID), 2, "one ControllerRevision per template")

	// A subset removed from the topology: its Deployment goes, the other takes every replica.
	ud = h.uds.Modify(ud.Name, func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:1]
	})
	h.waitDeployments(ud, "only zone-a, with 7 replicas", func(m map[string]appsv1.Deployment) bool {
		_, b := m["zone-b"]
		return !b && len(m) == 1 && ptr.Deref(m["zone-a"].Spec.Replicas, 0) == 7
	})
	ud = h.uds.WaitFor(ud.Name, "7 pods in zone-a", settled(7))
	assert.Equal(t, map[string]int32{"zone-a": 7}, ud.Status.SubsetReplicas)
	assert.Len(t, ud.Status.SubsetStatuses, 1)
}

// A restarted controller finds the subsets it created and creates none twice, even when it restarts right after
// creating them; a subset Deployment deleted by hand is re-created.
func TestRestartKeepsOneWorkloadPerSubset(t *testing.T) {
	h := newHarness(t)
	h.zoneNodes("a", 1)
	h.zoneNodes("b", 1)
	stop := h.startController()
	ud := h.uds.Create(deploymentUD("api", 4, h.zoneSubset("a", "a", nil), h.zoneSubset("b", "b", nil)))
	h.waitDeployments(ud, "two subsets", func(m map[string]appsv1.Deployment) bool { return len(m) == 2 })
	stop()
	h.startController()
	ud = h.uds.WaitFor(ud.Name, "4 pods ready", settled(4))
	testenv.Consistently(t, 3*time.Second, func() error {
		h.deployments(ud) // fails the test on two Deployments of one subset
		return nil
	})
	deps := h.deployments(ud)
	require.Len(t, deps, 2)
	gone := deps["a"]
	require.NoError(t, h.Env.Kube.AppsV1().Deployments(h.NS).Delete(context.Background(), gone.Name, metav1.DeleteOptions{}))
	h.waitDeployments(ud, "subset a re-created", func(m map[string]appsv1.Deployment) bool {
		a, ok := m["a"]
		return ok && a.Name != gone.Name
	})
	h.uds.WaitFor(ud.Name, "4 pods ready again", settled(4))
}
