package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestNodeImagePerNode: every node gets a NodeImage named after it carrying its labels; a relabelled node's
// NodeImage follows; a deleted node's NodeImage goes.
func TestNodeImagePerNode(t *testing.T) {
	h := newHarness(t, 2)
	h.startController()
	for _, n := range h.nodes {
		ni := h.nis.WaitFor(n, "created with the node's labels", func(ni *appsv1beta1.NodeImage) bool {
			return ni.Labels[testenv.TestNodeLabel] == h.NS
		})
		assert.Empty(t, ni.Spec.Images)
	}
	h.Nodes().Modify(h.nodes[0], func(n *corev1.Node) { n.Labels["pull-pool"] = "a" })
	h.nis.WaitFor(h.nodes[0], "label pull-pool=a copied", func(ni *appsv1beta1.NodeImage) bool { return ni.Labels["pull-pool"] == "a" })

	require.NoError(t, h.Env.Kube.CoreV1().Nodes().Delete(context.Background(), h.nodes[1], metav1.DeleteOptions{}))
	h.nis.WaitGone(h.nodes[1])
	_, err := h.Client.AppsV1beta1().NodeImages().Get(context.Background(), h.nodes[0], metav1.GetOptions{})
	require.NoError(t, err, "the other node's NodeImage stays")
}

// TestNodeImageNoResponse: a tag the node never answers fails on the manager side once the response timeout has
// passed since createdAt, with OpenKruise's message, and the counts are recomputed.
func TestNodeImageNoResponse(t *testing.T) {
	h := newHarness(t, 1)
	h.startController()
	h.waitNodeImages()
	old := metav1.NewTime(metav1.Now().Add(-nodeimageResponseTimeout() - 1e9))
	h.nis.Modify(h.nodes[0], func(ni *appsv1beta1.NodeImage) {
		ni.Spec.Images = map[string]appsv1beta1.ImageSpec{imageName: {Tags: []appsv1beta1.ImageTagSpec{{Tag: imageTag, CreatedAt: &old}}}}
	})
	ni := h.nis.WaitFor(h.nodes[0], "tag failed for no response", func(ni *appsv1beta1.NodeImage) bool {
		tags := ni.Status.ImageStatuses[imageName].Tags
		return len(tags) == 1 && tags[0].Phase == appsv1beta1.ImagePhaseFailed
	})
	assert.Equal(t, "node has not responded for a long time", ni.Status.ImageStatuses[imageName].Tags[0].Message)
	assert.Equal(t, int32(1), ni.Status.Desired)
	assert.Equal(t, int32(1), ni.Status.Failed)
}
