package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func (h *harness) imagePullJobs() []appsv1alpha1.ImagePullJob {
	h.t.Helper()
	list, err := h.client.AppsV1alpha1().ImagePullJobs(h.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(h.t, err)
	var out []appsv1alpha1.ImagePullJob
	for _, j := range list.Items {
		if j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out
}

// Item 7: with gate PreDownloadImageForInPlaceUpdate, an in-place rollout
// creates one ImagePullJob per changed container (parallelism from the
// annotation), marks the revision, and deletes the jobs once the rollout is
// complete. A recreate rollout gets none.
func TestImagePreDownload(t *testing.T) {
	h := newHarness(t)
	h.gates[features.PreDownloadImageForInPlaceUpdate] = true
	h.startController()
	cs := h.create(newCloneSet("pre", 4, func(cs *appsv1alpha1.CloneSet) {
		cs.Annotations = map[string]string{pub.ImagePreDownloadParallelismKey: "2"}
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
	}))
	h.waitStatus("pre", "settled", settled(4))
	h.modify("pre", setImage(imageV2))
	st := h.waitStatus("pre", "1 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReplicas == 1 })
	var jobs []appsv1alpha1.ImagePullJob
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		jobs = h.imagePullJobs()
		return expect(len(jobs) == 1, "%d ImagePullJobs", len(jobs))
	})
	j := jobs[0]
	assert.Equal(t, st.Status.UpdateRevision+"-main", j.Name)
	assert.Equal(t, imageV2, j.Spec.Image)
	assert.Equal(t, intstr.FromInt32(2), *j.Spec.Parallelism)
	require.NotNil(t, metav1.GetControllerOf(&j))
	assert.Equal(t, cs.UID, metav1.GetControllerOf(&j).UID)
	require.NotNil(t, j.Spec.PodSelector)
	assert.Equal(t, "pre", j.Spec.PodSelector.MatchLabels["app"])
	require.Len(t, j.Spec.PodSelector.MatchExpressions, 1)
	assert.Equal(t, pub.ControllerRevisionHashLabelKey, j.Spec.PodSelector.MatchExpressions[0].Key)
	assert.Equal(t, appsv1alpha1.Always, j.Spec.CompletionPolicy.Type)
	for _, r := range h.revisions(cs) {
		if r.Name == st.Status.UpdateRevision {
			assert.Equal(t, "true", r.Labels[pub.ImagePreDownloadCreatedKey])
		}
	}

	h.modify("pre", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = nil })
	h.waitStatus("pre", "rollout complete", settled(4))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		n := len(h.imagePullJobs())
		return expect(n == 0, "%d ImagePullJobs left", n)
	})

	// A ReCreate rollout is not worth a pre-download: the revision is marked ignored.
	h.modify("pre", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
		cs.Spec.Template.Spec.Containers[0].Image = imageV3
	})
	st = h.waitStatus("pre", "1 on v3", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReplicas == 1 })
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, r := range h.revisions(cs) {
			if r.Name == st.Status.UpdateRevision {
				return r.Labels[pub.ImagePreDownloadIgnoredKey] == "true", nil
			}
		}
		return false, nil
	})
	assert.Empty(t, h.imagePullJobs())
}
