package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Item 1: a pod as injection builds it with every feature at once — a
// before- and an after-app sidecar, a native sidecar and a plain init
// container, SidecarSet volumes (one shared with a second SidecarSet),
// imagePullSecrets, transferEnv, shared volumeMounts — is accepted by the
// API server, runs on kwok, and both SidecarSets count it.
func TestInjectedPodRuns(t *testing.T) {
	h := newHarness(t)
	h.startController()
	always := corev1.ContainerRestartPolicyAlways
	logs := corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	a := h.createSet(h.newSet("inj", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}
		s.Spec.Containers[0].TransferEnv = []appsv1alpha1.TransferEnvVar{{SourceContainerName: "main", EnvName: "LOG_LEVEL"}}
		s.Spec.Containers[0].ShareVolumePolicy.Type = appsv1alpha1.ShareVolumePolicyEnabled
		s.Spec.Containers = append(s.Spec.Containers, appsv1alpha1.SidecarContainer{
			Container:       corev1.Container{Name: "after", Image: sideV1},
			PodInjectPolicy: appsv1alpha1.AfterAppContainerType,
		})
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{
			{Container: corev1.Container{Name: "native", Image: sideV1, RestartPolicy: &always}},
			{Container: corev1.Container{Name: "setup", Image: sideV1}},
		}
		s.Spec.Volumes = []corev1.Volume{logs}
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
	}))
	b := h.createSet(h.newSet("inj-b", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Selector.MatchLabels = map[string]string{"app": "inj"}
		s.Spec.Containers[0].Name = "second"
		s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log"}}
		s.Spec.Volumes = []corev1.Volume{logs}
	}))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "inj-0", Namespace: h.NS, Labels: map[string]string{"app": "inj"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.local/app:v1",
			Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}}, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	injected, _, err := sidecarcontrol.Inject(pod, []*appsv1alpha1.SidecarSet{a, b}, sidecarcontrol.RevisionList{}, sidecarcontrol.Options{})
	require.NoError(t, err)
	_, err = h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), injected, metav1.CreateOptions{})
	require.NoError(t, err, "the API server accepts the injected pod")
	p := h.waitPods("inj", "running", allReady(1))[0]
	assert.Equal(t, []string{"side", "second", "main", "after"}, containerNames(p.Spec.Containers), "before-app sidecars in SidecarSet name order")
	assert.Equal(t, []string{"native", "setup"}, containerNames(p.Spec.InitContainers))
	assert.Equal(t, a.Name+","+b.Name, p.Annotations[sidecarcontrol.InjectedListAnnotation])
	for _, name := range []string{"inj", "inj-b"} {
		h.waitStatus(name, "1 matched and ready", func(s appsv1alpha1.SidecarSetStatus) bool { return s.MatchedPods == 1 && s.ReadyPods == 1 })
	}
}

// Item 3 (v1.3 §3, as written): the SidecarSet is labelled version-2,
// injects the revision labelled version-1 into new pods, and with partition
// 90% moves 10% of the pods to version-2.
func TestSeedCanaryRevisions(t *testing.T) {
	h := newHarness(t)
	h.startController()
	set := h.createSet(h.newSet("seed", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Labels[sidecarcontrol.CustomVersionLabel] = "version-1"
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	}))
	v1 := h.waitStatus("seed", "revision of version-1", func(s appsv1alpha1.SidecarSetStatus) bool { return s.LatestRevision != "" })
	h.sets.Modify(set.Name, func(s *appsv1alpha1.SidecarSet) {
		s.Labels[sidecarcontrol.CustomVersionLabel] = "version-2"
		setImage("side", sideV2)(s)
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
		s.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("version-1")}
	})
	h.waitStatus("seed", "revision of version-2", func(s appsv1alpha1.SidecarSetStatus) bool { return s.LatestRevision != v1.Status.LatestRevision })

	created := h.createPods("seed", 10, nil, nil)
	for _, p := range created {
		require.Equal(t, sideV1, image(p, "side"), "new pods get version-1")
		require.Equal(t, v1.Status.LatestRevision, sidecarcontrol.PodControllerRevision(p, set.Name))
	}
	h.waitStatus("seed", "1 of 10 on version-2", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 10 && s.UpdatedPods == 1 && s.UpdatedReadyPods == 1
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := countOn(h.pods("seed"), "side", sideV2); n != 1 {
			return assert.AnError
		}
		return nil
	})
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
