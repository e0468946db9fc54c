package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Nodes a test creates for itself carry TestNodeLabel=<owner> (select them with a nodeSelector, so counts do not
// depend on other tests' nodes) and the NoSchedule taint TestNodeTaint=<owner> (so workloads of tests running in
// parallel never land on them; tolerate it with TestNodeToleration).
const (
	TestNodeLabel = "flotilla.dev/test"
	TestNodeTaint = "flotilla.dev/test-owner"
)

// TestNodeToleration tolerates the taint of every test-owned node.
func TestNodeToleration() corev1.Toleration {
	return corev1.Toleration{Key: TestNodeTaint, Operator: corev1.TolerationOpExists}
}

// KwokNodes creates n fake nodes managed by kwok, owned by owner (usually the test's namespace), with extra
// labels and taints, waits until they are Ready and deletes them in t.Cleanup. It returns their names. Never
// change the shared kwok-node-* nodes in a test: other packages run against them at the same time.
func (e *Env) KwokNodes(t testing.TB, owner string, n int, labels map[string]string, taints ...corev1.Taint) []string {
	t.Helper()
	ctx := context.Background()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l := map[string]string{TestNodeLabel: owner, "kubernetes.io/os": "linux", "type": "kwok-test"}
		for k, v := range labels {
			l[k] = v
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: owner + "-n",
				Labels:       l,
				Annotations:  map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			},
			Spec: corev1.NodeSpec{Taints: append([]corev1.Taint{
				{Key: TestNodeTaint, Value: owner, Effect: corev1.TaintEffectNoSchedule}}, taints...)},
			Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
		}
		created, err := e.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("testenv: creating node: %v", err)
		}
		name := created.Name
		t.Cleanup(func() {
			err := e.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("testenv: deleting node %s: %v", name, err)
			}
		})
		names = append(names, name)
	}
	for _, name := range names {
		Eventually(t, time.Minute, func() (bool, error) {
			node, err := e.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return nodeReady(node), nil
		})
	}
	return names
}

// nodeReady: kwok reports the node Ready and the node lifecycle controller lifted its not-ready taints.
func nodeReady(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
