package sidecarcontrol

// The hot-upgrade decisions, all of them here and pure: the container
// pair a hot sidecar is injected as and which of them works
// (HotUpgradeContainers, the working annotation), which container of the
// pair takes a new image (hotUpgradeTarget), whether a pod is mid-upgrade
// (HotUpgrading) and may flip (FlipReady), and the flip itself (Flip). The
// controller's plan (planUpgrade) flips before it upgrades anything; the
// cold in-place upgrade is upgrade.go.

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

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

// hotUpgradeTarget picks the container of a hot-upgrade pair to receive a
// new image: the one on the empty image, else the not-ready one, else the
// one not working.
func hotUpgradeTarget(sc *appsv1alpha1.SidecarContainer, pod *corev1.Pod) (target, other string) {
	n1, n2 := HotUpgradeNames(sc.Name)
	images := map[string]string{}
	for _, c := range pod.Spec.Containers {
		images[c.Name] = c.Image
	}
	empty := sc.UpgradeStrategy.HotUpgradeEmptyImage
	switch {
	case images[n1] == empty:
		return n1, n2
	case images[n2] == empty:
		return n2, n1
	}
	ready := map[string]bool{}
	for _, s := range pod.Status.ContainerStatuses {
		ready[s.Name] = s.Ready
	}
	switch {
	case ready[n1] && !ready[n2]:
		return n2, n1
	case !ready[n1] && ready[n2]:
		return n1, n2
	}
	working, idle := HotUpgradeContainers(sc.Name, pod)
	return idle, working
}

// HotUpgrading reports a hot-upgrade sidecar whose idle container is not on
// the empty image: an upgrade waiting for its flip.
func HotUpgrading(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	images := map[string]string{}
	for _, c := range pod.Spec.Containers {
		images[c.Name] = c.Image
	}
	for i := range set.Spec.Containers {
		sc := &set.Spec.Containers[i]
		if !IsHotUpgrade(sc) {
			continue
		}
		_, idle := HotUpgradeContainers(sc.Name, pod)
		if images[idle] != sc.UpgradeStrategy.HotUpgradeEmptyImage {
			return true
		}
	}
	return false
}

// FlipReady reports that a hot upgrade may flip: every container other than
// the idle hot-upgrade ones is ready, and the kubelet runs the new images.
func FlipReady(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	idle := sets.New[string]()
	for i := range set.Spec.Containers {
		if sc := &set.Spec.Containers[i]; IsHotUpgrade(sc) {
			_, o := HotUpgradeContainers(sc.Name, pod)
			idle.Insert(o)
		}
	}
	if len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if !idle.Has(s.Name) && !s.Ready {
			return false
		}
	}
	return Consistent(pod, set)
}

// Flip returns a copy of pod whose hot-upgrade containers that are idle but
// not on the empty image (the old version after an upgrade) are reset to
// the empty image, their version annotations zeroed; changed lists them.
func Flip(pod *corev1.Pod, set *appsv1alpha1.SidecarSet, now time.Time) (*corev1.Pod, []string, error) {
	out, index := editableCopy(pod)
	var changed []string
	for i := range set.Spec.Containers {
		sc := &set.Spec.Containers[i]
		if !IsHotUpgrade(sc) {
			continue
		}
		working, idle := HotUpgradeContainers(sc.Name, out)
		j, ok := index[idle]
		if !ok || out.Spec.Containers[j].Image == sc.UpgradeStrategy.HotUpgradeEmptyImage {
			continue
		}
		out.Spec.Containers[j].Image = sc.UpgradeStrategy.HotUpgradeEmptyImage
		out.Annotations[VersionAnnotation(idle)] = "0"
		out.Annotations[VersionAltAnnotation(working)] = "0"
		changed = append(changed, idle)
	}
	if len(changed) == 0 {
		return out, nil, nil
	}
	if err := recordState(out, set, changed, metav1.NewTime(now)); err != nil {
		return nil, nil, err
	}
	return out, changed, nil
}
