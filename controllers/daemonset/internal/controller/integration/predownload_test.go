package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestImagePreDownload: with PreDownloadImageForDaemonSetUpdate, a rollout
// creates one ImagePullJob per new image — for the pods not yet at the
// update hash, with the annotation's parallelism and the template's
// imagePullSecrets — and labels the update revision; the jobs go once every
// pod is updated. A rollout done in one batch is labelled ignored instead.
func TestImagePreDownload(t *testing.T) {
	h := newHarness(t)
	h.gates[features.PreDownloadImageForDaemonSetUpdate] = true
	h.gates[features.KruiseDaemon] = true // as in OpenKruise, pre-download needs the node agent gate
	nodes, _ := h.place("pre", 4, rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Partition = ptr.To(intstr.FromInt32(2)) }),
		func(ds *appsv1alpha1.DaemonSet) {
			ds.Annotations = map[string]string{pub.ImagePreDownloadParallelismKey: "2"}
			ds.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		})
	h.waitStatus("pre", "settled", settled(4))
	hash := h.rollTo("pre", imageV2)
	jobs := h.Client.AppsV1alpha1().ImagePullJobs(h.NS)
	ctx := context.Background()
	var job *appsv1alpha1.ImagePullJob
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		j, err := jobs.Get(ctx, "pre-"+hash+"-main", metav1.GetOptions{})
		job = j
		return err == nil, nil
	})
	assert.Equal(t, imageV2, job.Spec.Image)
	assert.Equal(t, []string{"regcred"}, job.Spec.PullSecrets)
	assert.Equal(t, intstr.FromInt32(2), *job.Spec.Parallelism)
	assert.Contains(t, job.Spec.PodSelector.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: pub.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"pre-" + hash, hash}})
	assert.Equal(t, "pre", job.Spec.PodSelector.MatchLabels["app"])
	rev, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Get(ctx, "pre-"+hash, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", rev.Labels[pub.ImagePreDownloadCreatedKey])

	h.sets.Modify("pre", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Partition = nil }))
	h.waitPlaced("pre", nodes, hash)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		list, err := jobs.List(ctx, metav1.ListOptions{})
		return err == nil && len(testenv.Live(list.Items)) == 0, err
	})

	// One batch (maxUnavailable covers every node): ignored.
	h.sets.Modify("pre", rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.MaxUnavailable = ptr.To(intstr.FromString("100%")) }))
	hash3 := h.rollTo("pre", "registry.local/agent:v3")
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		r, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Get(ctx, "pre-"+hash3, metav1.GetOptions{})
		return err == nil && r.Labels[pub.ImagePreDownloadIgnoredKey] == "true", nil
	})
}
