package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool { return ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue }

// ConditionStatus is the status of the pod's condition t ("" if absent).
func ConditionStatus(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// PodNames are the pods' names, in order.
func PodNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// PodUIDs maps the pods' names to their UIDs.
func PodUIDs(pods []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range pods {
		out[p.Name] = p.UID
	}
	return out
}

// Events returns the events in ns about the object called name.
func (e *Env) Events(t testing.TB, ns, name string) []corev1.Event {
	t.Helper()
	list, err := e.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatalf("testenv: list events: %v", err)
	}
	return list.Items
}

// PatchPod applies a JSON merge patch to a pod.
func (e *Env) PatchPod(t testing.TB, ns, name, patch string) {
	t.Helper()
	if _, err := e.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("testenv: patch pod %s: %v", name, err)
	}
}
