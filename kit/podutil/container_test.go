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
