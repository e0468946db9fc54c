package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// t0 is the fixed clock of these tests.
var t0 = time.Date(2022, 3, 22, 9, 6, 55, 0, time.UTC)

// template is a realistic three-container pod template: an application,
// a config sidecar reading an annotation through the downward API and a
// log agent reading a label.
func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "shop", "tier": "web", "track": "stable"},
			Annotations: map[string]string{"app-config": "v1", "owner": "team-a", "prometheus.io/scrape": "true"},
		},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}},
			Containers: []corev1.Container{
				{
					Name:  "main",
					Image: "registry.example.com/shop/web:v1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env: []corev1.EnvVar{
						{Name: "MODE", Value: "prod"},
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
					},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
						PeriodSeconds: 5,
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "logs", MountPath: "/var/log/app"}},
				},
				{
					Name:  "sidecar",
					Image: "registry.example.com/shop/config:v1",
					Env: []corev1.EnvVar{
						{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"},
						{Name: "APP_CONFIG", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['app-config']"}}},
					},
				},
				{
					Name:  "logs",
					Image: "fluent/fluent-bit:3.0",
					Env: []corev1.EnvVar{
						{Name: "TRACK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['track']"}}},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/app", ReadOnly: true}},
				},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			TerminationGracePeriodSeconds: new(int64(30)),
		},
	}
}

// data encodes a template as ControllerRevision data.
func data(tb testing.TB, tmpl *corev1.PodTemplateSpec) []byte {
	tb.Helper()
	b, err := revision.TemplatePatch(tmpl)
	require.NoError(tb, err)
	return b
}

// podFrom builds a running pod from a template, every container Ready and
// reporting imageID "id-<image>".
func podFrom(tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Namespace, pod.Name = "default", "shop-abcde"
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, Ready: true,
		})
	}
	return pod
}

// setStatus changes the status of one container.
func setStatus(pod *corev1.Pod, name, image, imageID string, ready bool) {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			pod.Status.ContainerStatuses[i] = corev1.ContainerStatus{Name: name, Image: image, ImageID: imageID, Ready: ready}
			return
		}
	}
	panic("no container " + name)
}

func container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	panic("no container " + name)
}

// simplePod is a pod with the given containers (name, env priority or "").
func simplePod(containers ...[2]string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
	for _, c := range containers {
		ctr := corev1.Container{Name: c[0], Image: c[0] + ":v1"}
		if c[1] != "" {
			ctr.Env = []corev1.EnvVar{{Name: "KRUISE_CONTAINER_PRIORITY", Value: c[1]}}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, ctr)
	}
	return pod
}

// images is a spec changing the image of the named containers to <name>:v2.
func images(names ...string) Spec {
	s := Spec{ContainerImages: map[string]string{}}
	for _, n := range names {
		s.ContainerImages[n] = n + ":v2"
	}
	return s
}

// reportRestarted writes the runtime-containers-meta a node agent reports
// once every container of pod runs (under its status's containerID) with the
// env its labels and annotations resolve to now.
func reportRestarted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	set := &pub.RuntimeContainerMetaSet{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		set.Containers = append(set.Containers, pub.RuntimeContainerMeta{Name: c.Name, ContainerID: containerStatus(pod, c.Name).ContainerID,
			Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: containermeta.ExpectedHash(c, pod.Labels, pod.Annotations)}})
	}
	v, err := containermeta.Encode(set)
	require.NoError(t, err)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[pub.RuntimeContainerMetaKey] = v
}
