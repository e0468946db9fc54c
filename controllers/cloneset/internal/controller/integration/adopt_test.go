package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// TestAdoptOrphan: a pod without a controller that carries the instance-id
// label and matches the selector is adopted instead of a new one created.
// It is labelled with the CloneSet's first revision, so no update replaces it
// and the test can check it is the same pod.
func TestAdoptOrphan(t *testing.T) {
	h := newHarness(t)
	h.startController()
	cs := newCloneSet("adopt", 1)
	data, err := revision.TemplatePatch(&cs.Spec.Template)
	require.NoError(t, err)
	var zero int32
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt-orphn", Labels: map[string]string{
			"app": "adopt", pub.CloneSetInstanceID: "orphn",
			pub.ControllerRevisionHashLabelKey: revision.Name("adopt", revision.Hash(data, &zero)),
		}},
		Spec: *cs.Spec.Template.Spec.DeepCopy(),
	}
	orphan, err = h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), orphan, metav1.CreateOptions{})
	require.NoError(t, err)
	h.waitPods("adopt", "orphan running", allReady(1))

	created := h.create(cs)
	pods := h.waitPods("adopt", "adopted", func(ps []corev1.Pod) bool {
		ref := (*metav1.OwnerReference)(nil)
		if len(ps) == 1 {
			ref = metav1.GetControllerOf(&ps[0])
		}
		return ref != nil && ref.UID == created.UID
	})
	assert.Equal(t, orphan.UID, pods[0].UID, "the orphan itself, not a new pod")
	h.waitStatus("adopt", "settled", settled(1))
	assert.Len(t, h.pods("adopt"), 1)
}
