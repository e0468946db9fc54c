package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/node/cri"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// TestCloneSetPreDownloadOnRealNode: image pre-download end to end on the real node — cloneset-controller with
// PreDownloadImageForInPlaceUpdate, imagepulljob-controller and probe-agent, each as its ServiceAccount. A CloneSet
// of 4 pods (more than kit/predownload.MinReplicas) changes the side container's image with partition 4: the
// ImagePullJob it creates pulls the new image onto the node (CRI ImageStatus lists it) while no pod runs it yet;
// with the partition lifted every pod is updated in place and the kubelet's Pulled event says the image was
// already present.
func TestCloneSetPreDownloadOnRealNode(t *testing.T) {
	s := startPullStack(t)
	ctx := context.Background()
	ns := s.env.Namespace(t)
	s.startImagePullJobController(ns)
	framework.StartScoped(t, s.env, "cloneset", ns, "--feature-gates=KruiseDaemon=true,PreDownloadImageForInPlaceUpdate=true")
	newImage := pullTestImage(t, s.registry, "predownload")
	removeFromNode(t, s.images, newImage)

	cs := &appsv1alpha1.CloneSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: predl}
spec:
  replicas: 4
  selector: {matchLabels: {app: predl-cs}}
  updateStrategy: {type: InPlaceIfPossible, partition: 4, maxUnavailable: 1}
  template:`+podTemplate("predl-cs", s.registry, false, false)), cs))
	_, err := s.client.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, startTimeout, allOnImage(t, s.env, ns, "app=predl-cs", s.registry+"/flotilla/busybox:v1", 4))

	patch := func(p string) {
		_, err := s.client.AppsV1alpha1().CloneSets(ns).Patch(ctx, "predl", types.JSONPatchType, []byte(p), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patch(`[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"` + newImage + `"}]`)
	testenv.Eventually(t, pullTimeout, func() (bool, error) {
		jobs, err := s.client.AppsV1beta1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if j.Spec.Image == newImage && j.Status.Succeeded == 1 {
				return true, nil
			}
		}
		return false, fmt.Errorf("no ImagePullJob of %s with succeeded=1: %d jobs", newImage, len(jobs.Items))
	})
	img, err := cri.Present(ctx, s.images, newImage)
	require.NoError(t, err)
	require.NotNil(t, img, "the job succeeded, yet ImageStatus does not list %s", newImage)
	pods, err := s.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=predl-cs"})
	require.NoError(t, err)
	for _, p := range pods.Items {
		require.NotEqual(t, newImage, containerByName(&p, "side").Image, "pod %s updated before the pre-download finished", p.Name)
	}

	patch(`[{"op":"replace","path":"/spec/updateStrategy/partition","value":0}]`)
	testenv.Eventually(t, startTimeout, allOnImage(t, s.env, ns, "app=predl-cs", newImage, 4))
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		events, err := s.env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulled"})
		if err != nil {
			return false, err
		}
		present, pulled := map[string]bool{}, 0
		for _, e := range events.Items {
			if !strings.Contains(e.Message, newImage) {
				continue
			}
			if strings.Contains(e.Message, "already present on machine") {
				present[e.InvolvedObject.Name] = true
			} else {
				pulled++
			}
		}
		if pulled > 0 {
			return false, fmt.Errorf("the kubelet pulled %s itself %d times", newImage, pulled)
		}
		if len(present) != 4 {
			return false, fmt.Errorf("'already present' for %d pods of 4", len(present))
		}
		return true, nil
	})
}

// TestDaemonSetPreDownloadOnRealNode: the same for Advanced DaemonSet — daemonset-controller with
// PreDownloadImageForDaemonSetUpdate (and KruiseDaemon), imagepulljob-controller and probe-agent. The DaemonSet runs
// one pod, on the real node, updated InPlaceIfPossible. Its side image changes with partition 1: with one node,
// partition 0 would be a rollout in one batch (maxUnavailable 1 ≥ desired 1), for which no job is created
// (OpenKruise's rule, kit/predownload.DecideDaemonSet). The DaemonSet's one ImagePullJob (<revision>-side, owned by
// it) pulls the new image onto the node (CRI ImageStatus lists it) while the pod still runs the old one; with the
// partition lifted the pod is updated in place (same UID), the kubelet's Pulled event says the image was already
// present, and the job is deleted once the pod is updated.
func TestDaemonSetPreDownloadOnRealNode(t *testing.T) {
	s := startPullStack(t)
	ctx := context.Background()
	ns := s.env.Namespace(t)
	s.startImagePullJobController(ns)
	framework.StartScoped(t, s.env, "daemonset", ns, "--feature-gates=KruiseDaemon=true,PreDownloadImageForDaemonSetUpdate=true")
	newImage := pullTestImage(t, s.registry, "predownload-ds")
	removeFromNode(t, s.images, newImage)

	ds := &appsv1alpha1.DaemonSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: predl}
spec:
  selector: {matchLabels: {app: predl-ds}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {rollingUpdateType: InPlaceIfPossible, partition: 1}}
  template:`+podTemplate("predl-ds", s.registry, false, false)), ds))
	_, err := s.client.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, startTimeout, allOnImage(t, s.env, ns, "app=predl-ds", s.registry+"/flotilla/busybox:v1", 1))
	pods, err := s.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=predl-ds"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	before := pods.Items[0]

	patch := func(p string) {
		_, err := s.client.AppsV1alpha1().DaemonSets(ns).Patch(ctx, "predl", types.JSONPatchType, []byte(p), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patch(`[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"` + newImage + `"}]`)
	start := time.Now()
	var job appsv1beta1.ImagePullJob
	testenv.Eventually(t, pullTimeout, func() (bool, error) {
		jobs, err := s.client.AppsV1beta1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(jobs.Items) != 1 {
			return false, fmt.Errorf("%d ImagePullJobs, want the DaemonSet's one", len(jobs.Items))
		}
		job = jobs.Items[0]
		if job.Spec.Image != newImage || job.Status.Succeeded != 1 {
			return false, fmt.Errorf("ImagePullJob %s of %s: status %+v", job.Name, job.Spec.Image, job.Status)
		}
		return true, nil
	})
	t.Logf("ImagePullJob %s succeeded %.1f s after the template change", job.Name, time.Since(start).Seconds())
	require.True(t, strings.HasSuffix(job.Name, "-side"), "job name <revision>-<container>: %s", job.Name)
	owner := metav1.GetControllerOf(&job)
	require.NotNil(t, owner, "job %s has no controller", job.Name)
	require.Equal(t, "DaemonSet", owner.Kind)
	require.Equal(t, "predl", owner.Name)
	img, err := cri.Present(ctx, s.images, newImage)
	require.NoError(t, err)
	require.NotNil(t, img, "the job succeeded, yet ImageStatus does not list %s", newImage)
	p, err := s.env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, containerByName(&before, "side").ContainerID, containerByName(p, "side").ContainerID,
		"pod %s updated before the pre-download finished", p.Name)
	require.NotEqual(t, newImage, containerByName(p, "side").Image)

	patch(`[{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/partition","value":0}]`)
	testenv.Eventually(t, startTimeout, allOnImage(t, s.env, ns, "app=predl-ds", newImage, 1))
	p, err = s.env.Kube.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, before.UID, p.UID, "updated in place")
	require.EqualValues(t, 1, containerByName(p, "side").RestartCount)
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		events, err := s.env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Pulled"})
		if err != nil {
			return false, err
		}
		present, pulled := 0, 0
		for _, e := range events.Items {
			if !strings.Contains(e.Message, newImage) {
				continue
			}
			if strings.Contains(e.Message, "already present on machine") {
				present++
			} else {
				pulled++
			}
		}
		if pulled > 0 {
			return false, fmt.Errorf("the kubelet pulled %s itself %d times", newImage, pulled)
		}
		if present != 1 {
			return false, fmt.Errorf("%d 'already present' events for %s, want 1", present, newImage)
		}
		return true, nil
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		_, err := s.client.AppsV1beta1().ImagePullJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("ImagePullJob %s still there once the pod is updated (%v)", job.Name, err)
	})
}
