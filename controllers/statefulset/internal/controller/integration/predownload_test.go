package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// imagePullJobs returns the namespace's live ImagePullJobs.
func (h *harness) imagePullJobs() []appsv1alpha1.ImagePullJob { h.T.Helper(); return h.ImagePullJobs() }

func (h *harness) waitJobs(what string, cond func([]appsv1alpha1.ImagePullJob) bool) []appsv1alpha1.ImagePullJob {
	h.T.Helper()
	return h.WaitImagePullJobs(what, cond)
}

// revision returns the named ControllerRevision.
func (h *harness) revision(name string) *appsv1.ControllerRevision {
	h.T.Helper()
	r, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.T, err)
	return r
}

func (h *harness) waitRevisionLabel(name, key string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		if l := h.revision(name).Labels; l[key] != "true" {
			return false, fmt.Errorf("revision %s labels %v, want %s", name, l, key)
		}
		return true, nil
	})
}

// Issue 8: Advanced StatefulSet pre-downloads under gate
// PreDownloadImageForInPlaceUpdate as CloneSet does: an in-place rollout
// held by a partition gets one ImagePullJob per changed container (owned by
// the set, carrying the template's labels + the revision hash and its
// imagePullSecrets, parallelism from the annotation), the revision is
// labelled created, and the jobs are deleted once the rollout has
// converged. A ReCreate rollout gets none and its revision is labelled
// ignored.
func TestImagePreDownload(t *testing.T) {
	h := newHarness(t)
	lab.PreDownloadGates(h.gates)
	h.startController()
	set := h.create(newSet("pre", 4, parallel, inPlaceReady, func(s *appsv1beta1.StatefulSet) {
		s.Annotations = map[string]string{pub.ImagePreDownloadParallelismKey: "2"}
		s.Spec.Template.Labels["tier"] = "db"
		s.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	}, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
		r.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		r.Partition = ptr.To(int32(3))
	})))
	h.waitStatus("pre", "settled", settled(4))
	h.modify("pre", setImage(imageV2))
	st := h.waitStatus("pre", "pre-3 updated", func(s appsv1beta1.StatefulSetStatus) bool { return s.UpdatedReadyReplicas == 1 })
	jobs := h.waitJobs("one job", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 1 })
	j := jobs[0]
	rev := h.revision(st.Status.UpdateRevision)
	hash := rev.Labels["controller.kubernetes.io/hash"]
	require.NotEmpty(t, hash)
	assert.Equal(t, st.Status.UpdateRevision+"-main", j.Name)
	assert.Equal(t, imageV2, j.Spec.Image)
	assert.True(t, metav1.IsControlledBy(&j, set))
	assert.Equal(t, "StatefulSet", metav1.GetControllerOf(&j).Kind)
	assert.Equal(t, map[string]string{"app": "pre", "tier": "db", "controller.kubernetes.io/hash": hash}, j.Labels)
	assert.Equal(t, []string{"registry"}, j.Spec.PullSecrets)
	assert.Equal(t, intstr.FromInt32(2), *j.Spec.Parallelism)
	assert.Equal(t, "pre", j.Spec.PodSelector.MatchLabels["app"])
	assert.Equal(t, []metav1.LabelSelectorRequirement{{
		Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{st.Status.UpdateRevision, hash},
	}}, j.Spec.PodSelector.MatchExpressions)
	h.waitRevisionLabel(st.Status.UpdateRevision, pub.ImagePreDownloadCreatedKey)

	h.modify("pre", rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To(int32(0)) }))
	h.waitStatus("pre", "rollout complete", settled(4))
	h.waitJobs("all deleted", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 0 })

	// ReCreate: not worth a pre-download.
	h.modify("pre", func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = imageV1
		s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreatePodUpdateStrategyType
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(int32(3))
	})
	st = h.waitStatus("pre", "pre-3 recreated", func(s appsv1beta1.StatefulSetStatus) bool {
		return s.UpdateRevision != s.CurrentRevision && s.UpdatedReadyReplicas == 1
	})
	h.waitRevisionLabel(st.Status.UpdateRevision, pub.ImagePreDownloadIgnoredKey)
	assert.Empty(t, h.imagePullJobs())
}
