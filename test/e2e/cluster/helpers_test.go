package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const (
	annUnready  = "sim.kwok.x-k8s.io/unready-containers"
	annComplete = "sim.kwok.x-k8s.io/complete"
	podTimeout  = 30 * time.Second
)

// newPod returns a pod with one container per name (image registry.example/<name>:v1).
func newPod(name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.example/" + c + ":v1"})
	}
	return pod
}

func createPod(t *testing.T, env *testenv.Env, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// waitPod polls the pod until cond holds and returns it.
func waitPod(t *testing.T, env *testenv.Env, ns, name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	t.Logf("waiting for pod %s: %s", name, what)
	testenv.Eventually(t, podTimeout, func() (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), nil
	})
	return pod
}

func condition(pod *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func conditionTrue(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	c := condition(pod, typ)
	return c != nil && c.Status == corev1.ConditionTrue
}

func conditionFalse(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	c := condition(pod, typ)
	return c != nil && c.Status == corev1.ConditionFalse
}

func runningReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && conditionTrue(pod, corev1.PodReady)
}

func containerStatus(t *testing.T, pod *corev1.Pod, name string) corev1.ContainerStatus {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("pod %s has no status for container %s: %+v", pod.Name, name, pod.Status.ContainerStatuses)
	return corev1.ContainerStatus{}
}

// patchPod applies a strategic merge patch to the pod (or a subresource): containers merge by
// name, a nil map value deletes the key.
func patchPod(t *testing.T, env *testenv.Env, ns, name string, patch map[string]any, subresources ...string) {
	t.Helper()
	data, err := json.Marshal(patch)
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, subresources...)
	require.NoError(t, err)
}

// setPodCondition sets one status condition, the way a controller owning a readiness gate does.
func setPodCondition(t *testing.T, env *testenv.Env, ns, name string, typ corev1.PodConditionType, status corev1.ConditionStatus) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": typ, "status": status, "lastTransitionTime": metav1.Now(),
	}}}})
	require.NoError(t, err)
	_, err = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}
