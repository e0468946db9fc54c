package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Issue 25 row 1: as in OpenKruise the guard covers every namespace but
// those labelled control-plane, kube-system included. A budget over
// coredns-like pods in kube-system with maxUnavailable 0 is enforced, as
// its status (0 allowed) says.
func TestGuardInKubeSystem(t *testing.T) {
	h := newHarnessIn(t, metav1.NamespaceSystem)
	app := "coredns-" + h.home // unique: kube-system is shared
	// Registered before start, so they run after the guard's configuration
	// is gone and nothing refuses them.
	h.cleanupApp(app)

	h.start()
	h.createPods(app, 2, nil)
	h.waitReady(app, 2)
	h.pubs.Create(newPub(app, app, "0", totalReplicas("2")))
	h.waitScoped()
	h.waitStatus(app, "nothing may be disrupted", counts(0, 2, 2, 2))
	h.waitMarked(app)

	err := h.deletePod(app + "-0")
	require.Error(t, err, "the budget's status says 0 allowed: the delete must be refused")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "PodUnavailableBudget "+app+" refuses DELETE of pod "+app+"-0")
	assert.Len(t, h.pods(app), 2)
}

// Issue 25 row 1, the other side: a namespace labelled control-plane is
// never guarded (OpenKruise's own namespace is, and flotilla-system is, so
// labelled), even with a spent budget there.
func TestGuardSkipsControlPlaneNamespaces(t *testing.T) {
	h := newHarness(t)
	patch := `{"metadata":{"labels":{"control-plane":"test"}}}`
	_, err := h.Env.Kube.CoreV1().Namespaces().Patch(context.Background(), h.NS, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	h.start()
	h.createPods("web", 2, nil)
	h.waitReady("web", 2)
	h.pubs.Create(newPub("web", "web", "0", totalReplicas("2")))
	h.waitScoped()
	h.waitStatus("web", "nothing may be disrupted", counts(0, 2, 2, 2))
	h.waitMarked("web")

	before := h.calls()
	require.NoError(t, h.deletePod("web-0"), "a control-plane namespace is outside the guard")
	assert.Equal(t, before, h.calls(), "the API server did not call the guard")
}

// cleanupApp deletes, at the end of the test, the budget and pods named
// after app in a namespace the test does not own.
func (h *harness) cleanupApp(app string) {
	h.T.Cleanup(func() {
		ctx := context.Background()
		_ = h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS).Delete(ctx, app, metav1.DeleteOptions{})
		err := h.Env.Kube.CoreV1().Pods(h.NS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
			metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			h.T.Errorf("delete pods app=%s in %s: %v", app, h.NS, err)
		}
	})
}
