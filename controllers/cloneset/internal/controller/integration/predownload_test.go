package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func (h *harness) imagePullJobs() []appsv1alpha1.ImagePullJob { h.T.Helper(); return h.ImagePullJobs() }

func enablePreDownload(h *harness) { lab.PreDownloadGates(h.gates) }

// Item 7: with gate PreDownloadImageForInPlaceUpdate, an in-place rollout
// creates one ImagePullJob per changed container (parallelism from the
// annotation), marks the revision, and deletes the jobs once the rollout is
// complete. A recreate rollout gets none.
func TestImagePreDownload(t *testing.T) {
	h := newHarness(t)
	enablePreDownload(h)
	h.startController()
	cs := h.create(newCloneSet("pre", 4, inPlacePartition(3), func(cs *appsv1alpha1.CloneSet) {
		cs.Annotations = map[string]string{pub.ImagePreDownloadParallelismKey: "2"}
	}))
	h.waitStatus("pre", "settled", settled(4))
	h.modify("pre", setImage(imageV2))
	st := h.waitStatus("pre", "1 updated", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReplicas == 1 })
	j := h.waitJobs("one job", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 1 })[0]
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
	h.waitJobs("none left", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 0 })

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

// waitJobs polls until the CloneSet's live ImagePullJobs satisfy cond.
func (h *harness) waitJobs(what string, cond func([]appsv1alpha1.ImagePullJob) bool) []appsv1alpha1.ImagePullJob {
	h.T.Helper()
	return h.WaitImagePullJobs(what, cond)
}

// revisionLabel waits until the named revision carries label key.
func (h *harness) waitRevisionLabel(cs *appsv1alpha1.CloneSet, revision, key string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		for _, r := range h.revisions(cs) {
			if r.Name == revision {
				return expect(r.Labels[key] == "true", "revision %s labels %v, want %s", r.Name, r.Labels, key)
			}
		}
		return expect(false, "no revision %s", revision)
	})
}

// Issue 8: the ImagePullJob carries what OpenKruise puts on it: the template's
// labels plus the update revision's controller.kubernetes.io/hash (on the job
// and its sandbox config), the template's annotations (sandbox config), the
// template's imagePullSecrets, and a pod selector excluding pods at the update
// revision by name and by hash.
func TestImagePreDownloadJobLabelsAndPullSecrets(t *testing.T) {
	h := newHarness(t)
	enablePreDownload(h)
	h.startController()
	cs := h.create(newCloneSet("pre-meta", 4, inPlacePartition(3), func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Labels["tier"] = "web"
		cs.Spec.Template.Annotations = map[string]string{"team": "blue"}
		cs.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-a"}, {Name: "registry-b"}}
	}))
	h.waitStatus("pre-meta", "settled", settled(4))
	h.modify("pre-meta", setImage(imageV2))
	jobs := h.waitJobs("one job", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 1 })
	// The job is created before the status of the same sync is written.
	updateRev := h.waitStatus("pre-meta", "new update revision", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.UpdateRevision != s.CurrentRevision
	}).Status.UpdateRevision
	var hash string
	for _, r := range h.revisions(cs) {
		if r.Name == updateRev {
			hash = r.Labels["controller.kubernetes.io/hash"]
		}
	}
	require.NotEmpty(t, hash)

	j := jobs[0]
	wantLabels := map[string]string{"app": "pre-meta", "tier": "web", "controller.kubernetes.io/hash": hash}
	assert.Equal(t, wantLabels, j.Labels)
	assert.Equal(t, []string{"registry-a", "registry-b"}, j.Spec.PullSecrets)
	require.NotNil(t, j.Spec.SandboxConfig)
	assert.Equal(t, wantLabels, j.Spec.SandboxConfig.Labels)
	assert.Equal(t, map[string]string{"team": "blue"}, j.Spec.SandboxConfig.Annotations)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{
		Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{updateRev, hash},
	}}, j.Spec.PodSelector.MatchExpressions)
	assert.Equal(t, int32(300), *j.Spec.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(1), *j.Spec.PullPolicy.BackoffLimit)
	assert.Equal(t, int32(600), *j.Spec.CompletionPolicy.TTLSecondsAfterFinished)
	// The CloneSet's selector finds its job, as it finds its pods and revisions.
	sel, err := metav1.LabelSelectorAsSelector(h.get("pre-meta").Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(j.Labels)))
}

// Issue 8: the "enough updated and ready pods" count is
// status.updatedReadyReplicas only while status.updateRevision is the update
// revision; right after a template change it still describes the previous
// rollout and counts 0. Here one pod is updated and ready at v2 (count 1 ≥
// min 1, v2's job is created); the template moves to v3 with a partition
// keeping every pod back: the stale count must not create v3's job, which
// waits until a v3 pod is updated and ready.
func TestImagePreDownloadStaleUpdatedReadyCount(t *testing.T) {
	h := newHarness(t)
	enablePreDownload(h)
	h.startController()
	h.create(newCloneSet("pre-stale", 4, inPlacePartition(3), func(cs *appsv1alpha1.CloneSet) {
		cs.Annotations = map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: "1"}
	}))
	h.waitStatus("pre-stale", "settled", settled(4))
	h.modify("pre-stale", setImage(imageV2))
	v2 := h.waitStatus("pre-stale", "one v2 pod ready", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 1 }).Status.UpdateRevision
	h.waitJobs("v2's job", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 1 && j[0].Name == v2+"-main" })

	h.modify("pre-stale", func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = imageV3
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(4))
	})
	// The sync that wrote this status looked at pre-download first, with the
	// stale status (v2, 1 updated ready).
	v3 := h.waitStatus("pre-stale", "v3 is the update revision", func(s appsv1alpha1.CloneSetStatus) bool {
		return s.UpdateRevision != v2 && s.UpdatedReplicas == 0
	}).Status.UpdateRevision
	for _, j := range h.imagePullJobs() {
		assert.NotEqual(t, v3+"-main", j.Name, "v3's job created from v2's updated ready count")
	}

	h.modify("pre-stale", func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3)) })
	h.waitStatus("pre-stale", "one v3 pod ready", func(s appsv1alpha1.CloneSetStatus) bool { return s.UpdatedReadyReplicas == 1 })
	h.waitJobs("v3's job", func(js []appsv1alpha1.ImagePullJob) bool {
		for _, j := range js {
			if j.Name == v3+"-main" {
				return true
			}
		}
		return false
	})
}

// Issue 8: "every pod in one batch" compares replicas with maxUnavailable
// rounded down: 80% of 4 is 3 (not 4), so an unpartitioned in-place rollout
// of 4 pods still gets its ImagePullJob (the revision is labelled created,
// not ignored).
func TestImagePreDownloadMaxUnavailableRoundsDown(t *testing.T) {
	h := newHarness(t)
	enablePreDownload(h)
	h.startController()
	cs := h.create(newCloneSet("pre-round", 4, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("80%"))
	}))
	h.waitStatus("pre-round", "settled", settled(4))
	h.modify("pre-round", setImage(imageV2))
	st := h.waitStatus("pre-round", "rolled out", settled(4))
	h.waitRevisionLabel(cs, st.Status.UpdateRevision, pub.ImagePreDownloadCreatedKey)
	// Converged: the job is gone again.
	h.waitJobs("none left", func(j []appsv1alpha1.ImagePullJob) bool { return len(j) == 0 })
}
