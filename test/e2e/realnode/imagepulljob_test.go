package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// TestImagePullJobOnRealNode runs both halves of image pre-download as their ServiceAccounts: imagepulljob-controller
// (scoped to the test's namespace and, by --node-selector, to the real node, so it never touches the shared
// cluster's other NodeImages) and probe-agent. An ImagePullJob of an image absent from the node ends with
// succeeded=1 and the image listed by CRI ImageStatus; a job whose pull secret has the wrong password for a registry
// that wants a login ends with failed=1 and the node in failedNodes.
func TestImagePullJobOnRealNode(t *testing.T) {
	s := startPullStack(t)
	ctx := context.Background()
	ns := s.env.Namespace(t)
	s.startImagePullJobController(ns)

	const tag = "pulltest-job"
	image := pullTestImage(t, s.registry, tag)
	removeFromNode(t, s.images, image)
	t.Cleanup(func() { removeFromNode(t, s.images, image) })
	job := s.pullJob(ns, "absent", image)
	require.Equal(t, int32(1), job.Status.Succeeded, "status %+v", job.Status)
	assert.Empty(t, job.Status.FailedNodes)
	img, err := cri.Present(ctx, s.images, image)
	require.NoError(t, err)
	require.NotNil(t, img, "job succeeded, yet ImageStatus does not list %s", image)

	locked := authRegistry(t, s.registry, "flotilla", "s3cret")
	lockedImage := locked + "/flotilla/busybox:" + tag
	t.Cleanup(func() { removeFromNode(t, s.images, lockedImage) })
	sec := dockerConfigSecret(locked, "flotilla", "wrong")
	sec.Name = "wrong-password"
	_, err = s.env.Kube.CoreV1().Secrets(ns).Create(ctx, &sec, metav1.CreateOptions{})
	require.NoError(t, err)
	job = s.pullJob(ns, "wrong-secret", lockedImage, sec.Name)
	assert.Equal(t, int32(1), job.Status.Failed, "status %+v", job.Status)
	assert.Equal(t, []string{s.node}, job.Status.FailedNodes)
	ni, err := s.client.AppsV1beta1().NodeImages().Get(ctx, s.node, metav1.GetOptions{})
	require.NoError(t, err)
	for _, st := range ni.Status.ImageStatuses[strings.TrimSuffix(lockedImage, ":"+tag)].Tags {
		t.Logf("node's status of %s: %s %q", lockedImage, st.Phase, st.Message)
	}
}

// pullJob creates an ImagePullJob of image on the real node (by name) and waits for it to complete.
func (s *pullStack) pullJob(ns, name, image string, secrets ...string) *appsv1beta1.ImagePullJob {
	s.t.Helper()
	jobs := s.client.AppsV1beta1().ImagePullJobs(ns)
	j := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1beta1.ImagePullJobSpec{Image: image,
		ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
			PullSecrets:      secrets,
			Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{s.node}},
			PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To(int32(60)), BackoffLimit: ptr.To(int32(1))},
			CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
		}}}
	start := time.Now()
	_, err := jobs.Create(context.Background(), j, metav1.CreateOptions{})
	require.NoError(s.t, err)
	var got *appsv1beta1.ImagePullJob
	testenv.Eventually(s.t, pullTimeout, func() (bool, error) {
		got, err = jobs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.CompletionTime == nil {
			return false, fmt.Errorf("job %s not complete: %+v", name, got.Status)
		}
		return true, nil
	})
	s.t.Logf("ImagePullJob %s (%s) completed in %v: %s", name, image, time.Since(start).Round(time.Millisecond), got.Status.Message)
	return got
}

// startImagePullJobController runs imagepulljob-controller scoped to ns and, by --node-selector, to the real node
// (so it never touches the shared cluster's other NodeImages); the NodeImage it creates for the real node is deleted
// after it stopped.
func (s *pullStack) startImagePullJobController(ns string) {
	s.t.Helper()
	s.t.Cleanup(func() {
		_ = s.client.AppsV1beta1().NodeImages().Delete(context.Background(), s.node, metav1.DeleteOptions{})
	})
	framework.StartScoped(s.t, s.env, "imagepulljob", ns, "--feature-gates=KruiseDaemon=true", "--nodeimage-creation-delay=0s",
		"--node-selector="+realNodeLabel+"=true")
}
