package install

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// imagePullJob: installed from its overlay beside the probe overlay (the node agent, which pulls what its node's
// NodeImage lists), both as pods on the real node, an ImagePullJob naming the real node gets its image written into
// that node's NodeImage (owned by the job) and completes with the node succeeded; the uninstall removes every object
// of the overlay (Deployment, RBAC, the pull-secret Role in the agent's namespace) and keeps the CRDs, the job, the
// NodeImage, the node agent and the other features.
func imagePullJob(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("probe")
	in.install("imagepulljob")
	agent, err := in.env.Kube.AppsV1().DaemonSets(agentNamespace).Get(ctx, "probe-agent", metav1.GetOptions{})
	require.NoError(t, err)
	ns := in.env.Namespace(t)

	nis := testenv.ObjectsOf(t, in.client.AppsV1beta1().NodeImages(), 2*time.Minute)
	nis.WaitFor(in.node, "the real node's NodeImage", func(*appsv1beta1.NodeImage) bool { return true })
	image := in.registry + "/flotilla/busybox:v2"
	jobs := testenv.ObjectsOf(t, in.client.AppsV1alpha1().ImagePullJobs(ns), 3*time.Minute)
	job := &appsv1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "pull-v2"}, Spec: appsv1alpha1.ImagePullJobSpec{Image: image}}
	job.Spec.Selector = &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{in.node}}
	job.Spec.CompletionPolicy = appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](150)}
	job.Spec.PullPolicy = &appsv1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](60)}
	created := jobs.Create(job)

	ni := nis.WaitFor(in.node, "the job's tag in the spec", func(ni *appsv1beta1.NodeImage) bool {
		for _, img := range ni.Spec.Images {
			for _, tag := range img.Tags {
				for _, r := range tag.OwnerReferences {
					if r.UID == created.UID && tag.Tag == "v2" {
						return true
					}
				}
			}
		}
		return false
	})
	assert.Contains(t, ni.Spec.Images, in.registry+"/flotilla/busybox")
	done := jobs.WaitFor("pull-v2", "completed", func(j *appsv1alpha1.ImagePullJob) bool { return j.Status.CompletionTime != nil })
	assert.Equal(t, int32(1), done.Status.Desired)
	assert.Equal(t, int32(1), done.Status.Succeeded, "the agent pulled: %+v", done.Status)
	assert.Equal(t, "job has completed", done.Status.Message)

	in.uninstall("imagepulljob")
	assert.Empty(t, in.present("imagepulljob"), "objects of the imagepulljob overlay left after its uninstall")
	for _, crd := range []string{"imagepulljobs.apps.kruise.io", "nodeimages.apps.kruise.io"} {
		_, err = in.env.Dynamic().Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
		require.NoError(t, err, "the CRD %s is kept", crd)
	}
	jobs.Get("pull-v2") // the job is kept
	nis.Get(in.node)    // and the NodeImage
	kept, err := in.env.Kube.AppsV1().DaemonSets(agentNamespace).Get(ctx, "probe-agent", metav1.GetOptions{})
	require.NoError(t, err, "the node agent (probe's) is kept")
	assert.Equal(t, agent.UID, kept.UID, "the node agent is the same object")
	in.assertKept(others)
	in.uninstall("probe")
}
