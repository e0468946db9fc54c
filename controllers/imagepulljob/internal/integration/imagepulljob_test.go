package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/imagepulljob"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/nodeimage"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func nodeimageResponseTimeout() time.Duration { return nodeimage.ResponseTimeout }

// TestImagePullJobParallelismAndStatus: at most parallelism nodes carry the job's tag until one finishes; the
// status counts follow what the nodes report; the job completes when all finished, the failed node listed.
func TestImagePullJobParallelismAndStatus(t *testing.T) {
	h := newHarness(t, 3)
	h.startController()
	h.waitNodeImages()
	j := h.job("pull", func(j *appsv1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(2)) })

	h.waitStatus("pull", "2 of 3 active", func(s *appsv1beta1.ImagePullJobStatus) bool {
		return s.Desired == 3 && s.Active == 2 && s.StartTime != nil && s.Message == "job is running, progress 0.0%"
	})
	first := h.withTag()
	require.Len(t, first, 2, "parallelism 2")
	ni := h.nis.Get(first[0])
	tag := tagOf(ni)
	require.NotNil(t, tag)
	assert.Equal(t, int64(0), tag.Version)
	assert.NotNil(t, tag.CreatedAt)
	require.Len(t, tag.OwnerReferences, 1)
	assert.Equal(t, corev1.ObjectReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob", Namespace: h.NS, Name: "pull", UID: j.UID}, tag.OwnerReferences[0])
	require.NotNil(t, tag.PullPolicy)
	assert.Equal(t, int32(600), *tag.PullPolicy.TimeoutSeconds)
	assert.Equal(t, int32(3), *tag.PullPolicy.BackoffLimit)
	assert.Equal(t, appsv1beta1.PullIfNotPresent, tag.ImagePullPolicy)

	h.report(first[0], appsv1beta1.ImagePhaseSucceeded, "")
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		if n := h.withTag(); len(n) != 3 {
			return false, fmt.Errorf("nodes with the tag: %v", n)
		}
		return true, nil
	})
	h.waitStatus("pull", "1 succeeded, 2 active", func(s *appsv1beta1.ImagePullJobStatus) bool {
		return s.Succeeded == 1 && s.Active == 2 && s.Message == "job is running, progress 33.3%"
	})
	third := h.nodes[slices.IndexFunc(h.nodes, func(n string) bool { return !slices.Contains(first, n) })]
	h.report(first[1], appsv1beta1.ImagePhaseFailed, "pull access denied")
	h.report(third, appsv1beta1.ImagePhaseSucceeded, "")
	done := h.waitStatus("pull", "completed", func(s *appsv1beta1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	assert.Equal(t, int32(3), done.Status.Desired)
	assert.Equal(t, int32(2), done.Status.Succeeded)
	assert.Equal(t, int32(1), done.Status.Failed)
	assert.Equal(t, int32(0), done.Status.Active)
	assert.Equal(t, []string{first[1]}, done.Status.FailedNodes)
	assert.Equal(t, "job has completed", done.Status.Message)
}

// TestImagePullJobDeadline: a job still pulling at activeDeadlineSeconds fails with OpenKruise's message, every
// unfinished node in failedNodes.
func TestImagePullJobDeadline(t *testing.T) {
	h := newHarness(t, 2)
	h.startController()
	h.waitNodeImages()
	h.job("late", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](3)
		j.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](1)} // the CRD wants deadline ≥ timeout
	})
	done := h.waitStatus("late", "failed at the deadline", func(s *appsv1beta1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	assert.Equal(t, "job exceeds activeDeadlineSeconds", done.Status.Message)
	assert.Equal(t, int32(2), done.Status.Failed)
	assert.Equal(t, int32(0), done.Status.Succeeded)
	assert.ElementsMatch(t, h.nodes, done.Status.FailedNodes)
}

// TestImagePullJobTTLAndCleanup: a finished job is deleted ttlSecondsAfterFinished later, and its tag then leaves
// the NodeImages; a job with completionPolicy Never never completes.
func TestImagePullJobTTLAndCleanup(t *testing.T) {
	h := newHarness(t, 1)
	h.startController()
	h.waitNodeImages()
	h.job("never", func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never })
	h.job("short", func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](2) })
	h.nis.WaitFor(h.nodes[0], "both jobs own the tag", func(ni *appsv1beta1.NodeImage) bool {
		t := tagOf(ni)
		return t != nil && len(t.OwnerReferences) == 2
	})
	h.report(h.nodes[0], appsv1beta1.ImagePhaseSucceeded, "")
	h.waitStatus("never", "all succeeded, not completed", func(s *appsv1beta1.ImagePullJobStatus) bool {
		return s.Succeeded == 1 && s.CompletionTime == nil
	})
	h.jobs.WaitGone("short")
	ni := h.nis.WaitFor(h.nodes[0], "short's owner reference removed", func(ni *appsv1beta1.NodeImage) bool {
		t := tagOf(ni)
		return t != nil && len(t.OwnerReferences) == 1
	})
	assert.Equal(t, "never", tagOf(ni).OwnerReferences[0].Name)

	require.NoError(t, h.Client.AppsV1beta1().ImagePullJobs(h.NS).Delete(context.Background(), "never", metav1.DeleteOptions{}))
	h.nis.WaitFor(h.nodes[0], "image removed with its last job", func(ni *appsv1beta1.NodeImage) bool { return len(ni.Spec.Images) == 0 })
}

// TestImagePullJobNodeChoice: selector.names picks those nodes; podSelector the nodes of matching active pods.
func TestImagePullJobNodeChoice(t *testing.T) {
	h := newHarness(t, 3)
	h.startController()
	h.waitNodeImages()
	h.job("by-name", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: []string{h.nodes[1], "no-such-node"}}
		j.Spec.CompletionPolicy.Type = appsv1beta1.Never
	})
	h.waitStatus("by-name", "one node", func(s *appsv1beta1.ImagePullJobStatus) bool { return s.Desired == 1 && s.Active == 1 })
	assert.Equal(t, []string{h.nodes[1]}, h.withTag())

	pods := testenv.ObjectsOf(t, h.Env.Kube.CoreV1().Pods(h.NS), waitTimeout)
	pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: h.nodes[2], Tolerations: []corev1.Toleration{testenv.TestNodeToleration()},
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	})
	h.job("by-pod", func(j *appsv1beta1.ImagePullJob) {
		j.Spec.Selector = nil
		j.Spec.PodSelector = &appsv1beta1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		j.Spec.CompletionPolicy.Type = appsv1beta1.Never
	})
	h.waitStatus("by-pod", "the pod's node", func(s *appsv1beta1.ImagePullJobStatus) bool { return s.Desired == 1 && s.Active == 1 })
	ni := h.nis.Get(h.nodes[2])
	require.NotNil(t, tagOf(ni))
	assert.Equal(t, "by-pod", tagOf(ni).OwnerReferences[0].Name)
}

// TestImagePullJobPullSecrets: a job's pull secret is copied into the agent's namespace (OpenKruise's
// annotations), the NodeImage names the copy, the job carries the protection finalizer; once the job finished the
// copy is deleted and the finalizer removed.
func TestImagePullJobPullSecrets(t *testing.T) {
	h := newHarness(t, 1)
	h.startController()
	h.waitNodeImages()
	data := map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1:5050":{"auth":"dTpw"}}}`)}
	_, err := h.Env.Kube.CoreV1().Secrets(h.NS).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson, Data: data}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.job("private", func(j *appsv1beta1.ImagePullJob) { j.Spec.PullSecrets = []string{"regcred"} })

	ni := h.nis.WaitFor(h.nodes[0], "tag with the secret copy", func(ni *appsv1beta1.NodeImage) bool {
		return tagOf(ni) != nil && len(ni.Spec.Images[imageName].PullSecrets) == 1
	})
	ref := ni.Spec.Images[imageName].PullSecrets[0]
	assert.Equal(t, h.agentNS, ref.Namespace)
	assert.Equal(t, appsv1beta1.ReferenceObjectModeBatch, ref.Mode)
	cp, err := h.Env.Kube.CoreV1().Secrets(h.agentNS).Get(context.Background(), ref.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, data, cp.Data)
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, cp.Type)
	assert.Equal(t, h.NS+"/regcred", cp.Annotations[imagepulljob.SecretAnnotationSourceKey])
	assert.Equal(t, h.NS+"/private", cp.Annotations[imagepulljob.SecretAnnotationReferences])
	assert.Contains(t, h.jobs.Get("private").Finalizers, imagepulljob.ProtectionFinalizer)

	h.report(h.nodes[0], appsv1beta1.ImagePhaseSucceeded, "")
	h.jobs.WaitFor("private", "completed, finalizer removed", func(j *appsv1beta1.ImagePullJob) bool {
		return j.Status.CompletionTime != nil && !slices.Contains(j.Finalizers, imagepulljob.ProtectionFinalizer)
	})
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		_, err := h.Env.Kube.CoreV1().Secrets(h.agentNS).Get(context.Background(), ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("copy %s still there (%v)", ref.Name, err)
	})
}
