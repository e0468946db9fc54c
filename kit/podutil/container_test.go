package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContainer(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}},
	}}
	if c := Container(pod, "b"); c == nil || c.Image != "b:1" || c != &pod.Spec.Containers[1] {
		t.Errorf("Container(b) = %v, want the pod's second container", c)
	}
	for _, name := range []string{"init", "missing", ""} {
		if c := Container(pod, name); c != nil {
			t.Errorf("Container(%q) = %v, want nil (spec.containers only)", name, c)
		}
	}
}

func TestContainerStatus(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init"}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "a", ContainerID: "c://a"}, {Name: "b", ContainerID: "c://b"}},
	}}
	if cs := ContainerStatus(pod, "b"); cs == nil || cs.ContainerID != "c://b" || cs != &pod.Status.ContainerStatuses[1] {
		t.Errorf("ContainerStatus(b) = %v, want the pod's second container status", cs)
	}
	for _, name := range []string{"init", "missing", ""} {
		if cs := ContainerStatus(pod, name); cs != nil {
			t.Errorf("ContainerStatus(%q) = %v, want nil (status.containerStatuses only)", name, cs)
		}
	}
}
