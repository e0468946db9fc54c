package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// A barrier left by an earlier pod of the same name (another owner UID, every key open) is not the new pod's: it
// is replaced by the pod's own, holding only its first key, so the new pod's containers still start in order.
// The stale barrier's owner is a pod that exists (not the garbage collector's to delete meanwhile).
func TestStaleBarrierOfEarlierPodReplaced(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	keeper, err := h.create(h.pod("keeper", nil, nil, "a"))
	require.NoError(t, err)
	old := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0-barrier", Namespace: h.NS, Labels: map[string]string{barrier.Label: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "keeper", UID: keeper.UID}}},
		Data: map[string]string{"p_0": "true", "p_-1": "true"},
	}
	_, err = h.Env.Kube.CoreV1().ConfigMaps(h.NS).Create(context.Background(), old, metav1.CreateOptions{})
	require.NoError(t, err)
	h.startController()

	p, err := h.create(h.pod("db-0", ordered, nil, "a", "b"))
	require.NoError(t, err)
	testenv.Eventually(t, timeout, func() (bool, error) {
		cm := h.barrier("db-0")
		return cm != nil && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == p.UID, nil
	})
	assert.Equal(t, map[string]string{"p_0": "true"}, h.barrier("db-0").Data)
}

// A barrier OpenKruise made (no label: not in the controller's cache) is found by name and used: its next key is
// added, with the label.
func TestUnlabelledBarrierTakenOver(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	p, err := h.create(h.pod("taken", ordered, nil, "a", "b"))
	require.NoError(t, err)
	theirs := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "taken-barrier", Namespace: h.NS,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "taken", UID: p.UID}}},
		Data: map[string]string{"p_0": "true"},
	}
	_, err = h.Env.Kube.CoreV1().ConfigMaps(h.NS).Create(context.Background(), theirs, metav1.CreateOptions{})
	require.NoError(t, err)
	h.startController()

	h.setReady("taken", map[string]bool{"a": true, "b": false})
	cm := h.waitKeys("taken", "p_0", "p_-1")
	assert.Equal(t, "true", cm.Labels[barrier.Label])
	assert.Equal(t, p.UID, cm.OwnerReferences[0].UID)
}
