package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Pods lists the pods in ns matching selector.
func Pods(t testing.TB, env *testenv.Env, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// ReadyOn is a testenv.Eventually condition: exactly n pods in ns match
// selector, all Ready, not terminating, with image in their first container.
func ReadyOn(t testing.TB, env *testenv.Env, ns, selector, image string, n int) func() (bool, error) {
	return func() (bool, error) {
		ps := Pods(t, env, ns, selector)
		ready := 0
		for _, p := range ps {
			if testenv.PodReady(&p) && p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image {
				ready++
			}
		}
		return ready == n && len(ps) == n, nil
	}
}
