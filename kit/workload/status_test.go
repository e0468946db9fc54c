package workload

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// StatusUpdate writes a copy with the new status and leaves the cached
// object as it was.
func TestStatusUpdate(t *testing.T) {
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	kube := fake.NewClientset(cached.DeepCopy())
	write := StatusUpdate(kube.CoreV1().Pods("ns"), cached, func(p *corev1.Pod, s corev1.PodStatus) { p.Status = s })
	out, err := write(context.Background(), corev1.PodStatus{Phase: corev1.PodRunning})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Phase != corev1.PodRunning {
		t.Errorf("written phase %q, want Running", out.Status.Phase)
	}
	if cached.Status.Phase != corev1.PodPending {
		t.Errorf("cached object modified: phase %q", cached.Status.Phase)
	}
	got, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.PodRunning {
		t.Errorf("stored phase %v (err %v), want Running", got.Status.Phase, err)
	}
}
