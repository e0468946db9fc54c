package sidecarcontrol

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)

func sidecar(name, image string, mut ...func(*appsv1alpha1.SidecarContainer)) appsv1alpha1.SidecarContainer {
	c := appsv1alpha1.SidecarContainer{Container: corev1.Container{Name: name, Image: image}}
	for _, m := range mut {
		m(&c)
	}
	return c
}

func newSet(name string, mut ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1alpha1.SidecarContainer{sidecar(name+"-c", "img:1")},
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func newPod(mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func container(t *testing.T, pod *corev1.Pod, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	t.Fatalf("container %s not in pod (containers %v, init %v)", name, names(pod.Spec.Containers), names(pod.Spec.InitContainers))
	return nil
}

func mustInject(t *testing.T, pod *corev1.Pod, sets []*appsv1alpha1.SidecarSet, revs RevisionSource, opts Options) (*corev1.Pod, []string) {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = t0
	}
	out, warnings, err := Inject(pod, sets, revs, opts)
	if err != nil {
		t.Fatalf("Inject: %v", err)
	}
	return out, warnings
}
