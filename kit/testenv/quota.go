package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodQuota caps the pods with requests (scope NotBestEffort) of namespace ns
// at n, as a tenant's quota would, and waits until the quota controller has
// filled in its status: until then the quota admits nothing.
func (e *Env) PodQuota(t testing.TB, ns string, n int64) {
	t.Helper()
	ctx := context.Background()
	_, err := e.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{
			Hard:   corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(n, resource.DecimalSI)},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv: create pod quota: %v", err)
	}
	Eventually(t, 90*time.Second, func() (bool, error) {
		q, err := e.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, err
	})
}

// HoldPods makes the pods of a template count against PodQuota (a tiny CPU
// request on the first container) and keeps them unscheduled (a scheduling
// gate nobody removes), so thousands of them load neither the scheduler nor
// the nodes.
func HoldPods(spec *corev1.PodSpec) {
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
	spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "flotilla.dev/hold"}}
}
