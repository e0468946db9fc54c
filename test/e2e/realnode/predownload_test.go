package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
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
