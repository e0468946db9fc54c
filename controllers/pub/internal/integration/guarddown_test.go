package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Issue 26 item 6: with every guard replica down and failurePolicy Fail,
// the requests the guard would always allow still go — a terminating
// protected pod completes its deletion (the kubelet's final grace-0 DELETE,
// a finalizer's removal) and metadata-only patches pass — while a delete or
// a spec change of a protected pod is still refused.
func TestWebhookDownTerminatingAndMetadata(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("kept", 3, nil)
	h.waitReady("kept", 3)
	// Bound to a node no kubelet runs: after its graceful delete it stays
	// Terminating until a grace-0 DELETE, the one a kubelet sends once the
	// containers stopped.
	ghost := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kept-ghost", Labels: map[string]string{"app": "kept"}},
		Spec: corev1.PodSpec{NodeName: "ghost-" + h.NS, TerminationGracePeriodSeconds: ptr.To(int64(30)),
			Containers: []corev1.Container{{Name: "main", Image: imageV1}}},
	}
	ghost, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), ghost, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), ghost.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	h.PatchPod("kept-1", `{"metadata":{"finalizers":["flotilla.dev/test-hold"]}}`)
	h.pubs.Create(newPub("kept", "kept", "2", totalReplicas("4")))
	h.waitScoped()
	h.waitMarked("kept")
	h.waitStatus("kept", "3 available of 4", counts(1, 3, 2, 4))

	// While the guard serves: both deletes are admitted (the ghost is not
	// ready; kept-1 takes the one unit), and both pods stay Terminating.
	require.NoError(t, h.deletePod(ghost.Name))
	require.NoError(t, h.deletePod("kept-1"))
	for _, name := range []string{ghost.Name, "kept-1"} {
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			p, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && p.DeletionTimestamp != nil, err
		})
	}

	h.stopWH()
	pods := h.Env.Kube.CoreV1().Pods(h.NS)
	_, err = pods.Patch(context.Background(), "kept-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"},"annotations":{"a":"b"}}}`), metav1.PatchOptions{})
	require.NoError(t, err, "a metadata-only patch of a protected pod does not wait on the guard")
	err = pods.Delete(context.Background(), ghost.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0)),
		Preconditions: &metav1.Preconditions{UID: &ghost.UID}})
	require.NoError(t, err, "the kubelet's final DELETE of a terminating pod does not wait on the guard")
	_, err = pods.Patch(context.Background(), "kept-1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err, "removing a terminating pod's finalizer does not wait on the guard")
	for _, name := range []string{ghost.Name, "kept-1"} {
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			_, err := pods.Get(context.Background(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}

	// What the guard must still decide is refused while it is down.
	err = h.deletePod("kept-2")
	require.Error(t, err, "Fail: a protected pod cannot be deleted while the guard is down")
	assert.Contains(t, err.Error(), webhook.PodWebhookName)
	_, err = pods.Patch(context.Background(), "kept-0", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"`+imageV2+`"}]`), metav1.PatchOptions{})
	require.Error(t, err, "Fail: an in-place update of a protected pod waits on the guard")
	assert.Contains(t, err.Error(), webhook.PodWebhookName)
}
