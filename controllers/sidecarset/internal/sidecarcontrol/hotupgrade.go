package sidecarcontrol

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// IsHotUpgrade reports a sidecar with upgradeType HotUpgrade.
func IsHotUpgrade(c *appsv1alpha1.SidecarContainer) bool {
	return c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade
}

// HotUpgradeNames are the two pod containers of hot-upgrade sidecar name.
func HotUpgradeNames(name string) (string, string) { return name + "-1", name + "-2" }

// VersionAnnotation / VersionAltAnnotation are the pod annotations a
// hot-upgrade container reads through SIDECARSET_VERSION(_ALT).
func VersionAnnotation(container string) string {
	return "version.sidecarset.kruise.io/" + container
}

// VersionAltAnnotation: see VersionAnnotation.
func VersionAltAnnotation(container string) string {
	return "versionalt.sidecarset.kruise.io/" + container
}

// WorkingContainers decodes kruise.io/sidecarset-working-hotupgrade-container:
// sidecar name → the pod container currently doing the work.
// A corrupt value reads as "nothing recorded" (the -1 container taken as
// working, the state at injection): the controller never acts on such a pod
// (CorruptAnnotation), and setWorking overwrites it.
func WorkingContainers(pod *corev1.Pod) map[string]string {
	out, _ := decodeWorking(pod)
	return out
}

func decodeWorking(pod *corev1.Pod) (map[string]string, error) {
	out := map[string]string{}
	if v := pod.Annotations[WorkingHotUpgradeContainer]; v != "" {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return map[string]string{}, fmt.Errorf("annotation %s: %w", WorkingHotUpgradeContainer, err)
		}
	}
	return out, nil
}

// HotUpgradeContainers returns the working and the other container of
// hot-upgrade sidecar name in pod.
func HotUpgradeContainers(name string, pod *corev1.Pod) (working, other string) {
	c1, c2 := HotUpgradeNames(name)
	if WorkingContainers(pod)[name] == c2 {
		return c2, c1
	}
	return c1, c2
}

// setWorking records container as the working one of sidecar in annotations.
func setWorking(annotations map[string]string, sidecar, container string) {
	m := WorkingContainers(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}})
	m[sidecar] = container
	data, _ := json.Marshal(m)
	annotations[WorkingHotUpgradeContainer] = string(data)
}

// hotUpgradePair expands a hot-upgrade sidecar into its two containers:
// -1 runs the image, -2 the empty image; both read their role from the
// version annotations.
func hotUpgradePair(c *appsv1alpha1.SidecarContainer) (corev1.Container, corev1.Container) {
	n1, n2 := HotUpgradeNames(c.Name)
	c1, c2 := *c.Container.DeepCopy(), *c.Container.DeepCopy()
	c1.Name, c2.Name = n1, n2
	c2.Image = c.UpgradeStrategy.HotUpgradeEmptyImage
	for _, x := range []*corev1.Container{&c1, &c2} {
		x.Env = append(x.Env,
			corev1.EnvVar{Name: VersionEnv, ValueFrom: annotationRef(VersionAnnotation(x.Name))},
			corev1.EnvVar{Name: VersionAltEnv, ValueFrom: annotationRef(VersionAltAnnotation(x.Name))})
	}
	return c1, c2
}

func annotationRef(key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", key),
	}}
}
