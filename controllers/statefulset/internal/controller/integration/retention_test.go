package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func retain(whenDeleted, whenScaled appsv1beta1.PersistentVolumeClaimRetentionPolicyType) func(*appsv1beta1.StatefulSet) {
	return func(s *appsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}

const (
	retainPolicy = appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	deletePolicy = appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
)

// waitClaimGone polls until the garbage collector (kube-controller-manager)
// has deleted the claim.
func (h *harness) waitClaimGone(name string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) { return h.claim(name) == nil, nil })
}

// TestClaimRetentionWhenScaled (v1.1 seed, gate StatefulSetAutoDeletePVC):
// whenScaled Delete removes the claims of the ordinals scaled away, while a
// pod recreated after an eviction keeps its claim; whenDeleted Retain keeps
// the rest when the set goes.
func TestClaimRetentionWhenScaled(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("ws", 3, withClaim, parallel, retain(retainPolicy, deletePolicy)))
	h.waitStatus("ws", "settled", settled(3))
	for _, n := range []string{"data-ws-0", "data-ws-1", "data-ws-2"} {
		require.NotNil(t, h.claim(n))
		assert.Empty(t, h.claim(n).OwnerReferences, "%s: a claim in use is not owned by its pod", n)
	}

	uid := h.claim("data-ws-0").UID
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "ws-0", metav1.DeleteOptions{}))
	h.waitPods("ws", "ws-0 recreated", func(ps []corev1.Pod) bool { return readyNames("ws-0", "ws-1", "ws-2")(ps) })
	assert.Equal(t, uid, h.claim("data-ws-0").UID, "an evicted pod comes back to its claim")

	h.modify("ws", func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	h.waitPods("ws", "scaled down", readyNames("ws-0"))
	h.waitClaimGone("data-ws-1")
	h.waitClaimGone("data-ws-2")
	assert.Equal(t, uid, h.claim("data-ws-0").UID)

	require.NoError(t, h.Client.AppsV1beta1().StatefulSets(h.NS).Delete(context.Background(), "ws", metav1.DeleteOptions{}))
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.pods("ws")) == 0, nil })
	assert.NotNil(t, h.claim("data-ws-0"), "whenDeleted Retain keeps the claim")
}

// TestClaimRetentionWhenDeleted: whenDeleted Delete makes the set own its
// claims, so they go with it; whenScaled Retain keeps scaled-away claims.
func TestClaimRetentionWhenDeleted(t *testing.T) {
	h := newHarness(t)
	h.startController()
	set := h.create(newSet("wd", 2, withClaim, parallel, retain(deletePolicy, retainPolicy)))
	h.waitStatus("wd", "settled", settled(2))
	for _, n := range []string{"data-wd-0", "data-wd-1"} {
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			c := h.claim(n)
			return c != nil && len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == set.UID, nil
		})
	}
	h.modify("wd", func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	h.waitPods("wd", "scaled down", readyNames("wd-0"))
	assert.NotNil(t, h.claim("data-wd-1"), "whenScaled Retain")

	require.NoError(t, h.Client.AppsV1beta1().StatefulSets(h.NS).Delete(context.Background(), "wd", metav1.DeleteOptions{}))
	h.waitClaimGone("data-wd-0")
	h.waitClaimGone("data-wd-1")
}
