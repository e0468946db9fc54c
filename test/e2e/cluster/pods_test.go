package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Pods bound by kube-scheduler to kwok nodes become Running and Ready, with kubelet-like
// container statuses.
func TestPodRunsOnKwokNode(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	createPod(t, env, ns, newPod("web", "app", "side"))

	pod := waitPod(t, env, ns, "web", "Running and Ready", runningReady)
	node, err := env.Kube.CoreV1().Nodes().Get(context.Background(), pod.Spec.NodeName, metav1.GetOptions{})
	require.NoError(t, err, "scheduled to node %q", pod.Spec.NodeName)
	assert.Equal(t, "fake", node.Annotations["kwok.x-k8s.io/node"])
	assert.NotEmpty(t, pod.Status.PodIP)
	assert.True(t, conditionTrue(pod, corev1.ContainersReady))
	assert.True(t, conditionTrue(pod, corev1.PodScheduled))
	require.Len(t, pod.Status.ContainerStatuses, 2)
	for _, s := range pod.Status.ContainerStatuses {
		assert.True(t, s.Ready, s.Name)
		assert.Zero(t, s.RestartCount, s.Name)
		assert.NotNil(t, s.State.Running, s.Name)
		assert.NotEmpty(t, s.ContainerID, s.Name)
		assert.Contains(t, s.ImageID, "@sha256:", s.Name)
		assert.Equal(t, "registry.example/"+s.Name+":v1", s.Image)
	}
}

// Changing one container's image restarts only that container, in place.
func TestInPlaceImageUpdate(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	createPod(t, env, ns, newPod("inplace", "app", "side"))
	before := waitPod(t, env, ns, "inplace", "Running and Ready", runningReady)
	appBefore, sideBefore := containerStatus(t, before, "app"), containerStatus(t, before, "side")

	patchPod(t, env, ns, "inplace", map[string]any{"spec": map[string]any{"containers": []map[string]any{
		{"name": "app", "image": "registry.example/app:v2"},
	}}})
	after := waitPod(t, env, ns, "inplace", "app restarted with image v2", func(p *corev1.Pod) bool {
		s := containerStatus(t, p, "app")
		return s.Image == "registry.example/app:v2" && s.RestartCount == 1
	})

	app := containerStatus(t, after, "app")
	assert.NotEqual(t, appBefore.ImageID, app.ImageID, "imageID")
	assert.NotEqual(t, appBefore.ContainerID, app.ContainerID, "containerID")
	require.NotNil(t, app.LastTerminationState.Terminated, "lastState.terminated")
	assert.Equal(t, appBefore.ContainerID, app.LastTerminationState.Terminated.ContainerID)
	assert.NotNil(t, app.State.Running)
	assert.True(t, app.Ready)

	side := containerStatus(t, after, "side")
	assert.Equal(t, sideBefore, side, "the other container must be untouched")

	assert.Equal(t, before.UID, after.UID)
	assert.Equal(t, before.Spec.NodeName, after.Spec.NodeName)
	assert.Equal(t, before.Status.PodIP, after.Status.PodIP)
	assert.Equal(t, corev1.PodRunning, after.Status.Phase)
	waitPod(t, env, ns, "inplace", "still Running and Ready", runningReady)
}

// Ready = ContainersReady && all readiness gates True, re-evaluated in both directions.
func TestReadinessGate(t *testing.T) {
	const gate corev1.PodConditionType = "flotilla.dev/gate"
	env := testenv.Get(t)
	ns := env.Namespace(t)
	pod := newPod("gated", "app")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
	createPod(t, env, ns, pod)

	// No gate condition yet: containers ready, pod not (kubelet semantics; nobody else sets the gate).
	p := waitPod(t, env, ns, "gated", "Running, containers ready, gate missing -> not Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && conditionTrue(p, corev1.ContainersReady) && conditionFalse(p, corev1.PodReady)
	})
	assert.Equal(t, "ReadinessGatesNotReady", condition(p, corev1.PodReady).Reason)

	setPodCondition(t, env, ns, "gated", gate, corev1.ConditionTrue)
	waitPod(t, env, ns, "gated", "gate True -> Ready", runningReady)

	setPodCondition(t, env, ns, "gated", gate, corev1.ConditionFalse)
	p = waitPod(t, env, ns, "gated", "gate False -> not Ready", func(p *corev1.Pod) bool { return conditionFalse(p, corev1.PodReady) })
	assert.True(t, conditionTrue(p, corev1.ContainersReady))
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)

	setPodCondition(t, env, ns, "gated", gate, corev1.ConditionTrue)
	waitPod(t, env, ns, "gated", "gate True again -> Ready", runningReady)
}

// The unready-containers annotation simulates failing readiness probes, both ways.
func TestUnreadyContainersAnnotation(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	createPod(t, env, ns, newPod("probe", "a", "b"))
	waitPod(t, env, ns, "probe", "Running and Ready", runningReady)

	patchPod(t, env, ns, "probe", map[string]any{"metadata": map[string]any{"annotations": map[string]any{annUnready: "b"}}})
	p := waitPod(t, env, ns, "probe", "b unready", func(p *corev1.Pod) bool {
		return !containerStatus(t, p, "b").Ready && conditionFalse(p, corev1.PodReady)
	})
	assert.True(t, containerStatus(t, p, "a").Ready, "a stays ready")
	assert.True(t, conditionFalse(p, corev1.ContainersReady))
	assert.Equal(t, "ContainersNotReady", condition(p, corev1.PodReady).Reason)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)

	patchPod(t, env, ns, "probe", map[string]any{"metadata": map[string]any{"annotations": map[string]any{annUnready: nil}}})
	p = waitPod(t, env, ns, "probe", "ready again", runningReady)
	assert.True(t, containerStatus(t, p, "a").Ready)
	assert.True(t, containerStatus(t, p, "b").Ready)
	assert.True(t, conditionTrue(p, corev1.ContainersReady))
	assert.Empty(t, condition(p, corev1.PodReady).Reason)
}

// The completion annotation drives a pod to Succeeded or Failed.
func TestCompletionAnnotation(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	t.Run("Succeeded from the pod template", func(t *testing.T) {
		pod := newPod("done", "main", "helper")
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Annotations = map[string]string{annComplete: "Succeeded"}
		createPod(t, env, ns, pod)
		p := waitPod(t, env, ns, "done", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		for _, s := range p.Status.ContainerStatuses {
			require.NotNil(t, s.State.Terminated, s.Name)
			assert.Zero(t, s.State.Terminated.ExitCode, s.Name)
			assert.False(t, s.Ready, s.Name)
		}
		assert.True(t, conditionFalse(p, corev1.PodReady))
	})

	t.Run("Failed after running", func(t *testing.T) {
		pod := newPod("fails", "main")
		pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		createPod(t, env, ns, pod)
		waitPod(t, env, ns, "fails", "Running and Ready", runningReady)
		patchPod(t, env, ns, "fails", map[string]any{"metadata": map[string]any{"annotations": map[string]any{annComplete: "Failed"}}})
		p := waitPod(t, env, ns, "fails", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		s := containerStatus(t, p, "main")
		require.NotNil(t, s.State.Terminated)
		assert.EqualValues(t, 1, s.State.Terminated.ExitCode)
		assert.Equal(t, "Error", s.State.Terminated.Reason)
	})
}

// Pods of a batch/v1 Job complete on their own (stock kwok behaviour), so Jobs finish.
func TestJobCompletes(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.example/job:v1"}},
			}},
		},
	}
	_, err := env.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, podTimeout, func() (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(context.Background(), "once", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return j.Status.Succeeded == 2, nil
			}
		}
		return false, nil
	})
}
