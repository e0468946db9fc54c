package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv/openkruise"
)

// A UnitedDeployment OpenKruise v1.9 ran (its ControllerRevision and subset Deployments as kruise-manager leaves
// them, built by kit/testenv/openkruise from OpenKruise's source): Flotilla finds the same revision (same bytes,
// same name), creates no revision and no Deployment, rewrites none (their generation stays), and reports the
// status from them.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	h.zoneNodes("a", 1)
	h.zoneNodes("b", 1)
	ud := h.uds.Create(deploymentUD("legacy", 3, h.zoneSubset("a", "a", nil), h.zoneSubset("b", "b", nil)))
	ctx := context.Background()
	rev, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Create(ctx, openkruise.UnitedDeploymentRevision(t, ud, 1), metav1.CreateOptions{})
	require.NoError(t, err)
	generations := map[string]int64{}
	for name, replicas := range map[string]int32{"a": 1, "b": 2} { // OpenKruise's remainder goes to the last name
		subset := ud.Spec.Topology.Subsets[0]
		if name == "b" {
			subset = ud.Spec.Topology.Subsets[1]
		}
		d, err := h.Env.Kube.AppsV1().Deployments(h.NS).Create(ctx,
			openkruise.UnitedDeploymentDeployment(ud, subset, "legacy-"+name+"-okrus", rev.Name, replicas), metav1.CreateOptions{})
		require.NoError(t, err)
		generations[d.Name] = d.Generation
	}
	h.uds.ModifyStatus(ud.Name, func(u *appsv1alpha1.UnitedDeployment) { u.Status.CurrentRevision = rev.Name })

	h.startController()
	ud = h.uds.WaitFor(ud.Name, "3 pods ready", settled(3))
	assert.Equal(t, rev.Name, ud.Status.CurrentRevision)
	assert.Equal(t, rev.Name, ud.Status.UpdateStatus.UpdatedRevision, "OpenKruise's revision is this template's")
	assert.Len(t, h.Revisions(ud.UID), 1, "no second revision")
	deps := h.deployments(ud)
	require.Len(t, deps, 2)
	for _, d := range deps {
		assert.Contains(t, generations, d.Name, "the same Deployments")
		assert.Equal(t, generations[d.Name], d.Generation, "%s not rewritten", d.Name)
	}
}
