package cluster

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// statuses records every status pod name in ns goes through, from before it exists (an informer: no polling gaps;
// the kwok stages' intermediate states last a few milliseconds).
func statuses(t *testing.T, env *testenv.Env, ns, name string) func() []corev1.PodStatus {
	t.Helper()
	var mu sync.Mutex
	var seen []corev1.PodStatus
	framework.OnPods(t, env, ns, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}, func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, *p.Status.DeepCopy())
	})
	return func() []corev1.PodStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]corev1.PodStatus(nil), seen...)
	}
}

// pendingStepLoaded says whether the cluster under test plays kwok/pod-pending.yaml (up.sh leaves it out with
// KWOK_POD_PENDING_STEP=0; a shared cluster is assumed to have the default).
func pendingStepLoaded() bool { return os.Getenv("KWOK_POD_PENDING_STEP") != "0" }

// pod-pending: the kubelet's Pending status before Running, with init containers still to run.
func TestPendingStepWithInitContainers(t *testing.T) {
	if !pendingStepLoaded() {
		t.Skip("KWOK_POD_PENDING_STEP=0: the cluster has no Pending step")
	}
	env := testenv.Get(t)
	ns := env.Namespace(t)
	seen := statuses(t, env, ns, "init")
	pod := newPod("init", "b", "a")
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.example/setup:v1"}}
	createPod(t, env, ns, pod)
	p := waitPod(t, env, ns, "init", "Running and Ready", runningReady)

	var pending *corev1.PodStatus
	for _, s := range seen() {
		if s.Phase == corev1.PodPending && s.HostIP != "" {
			pending = &s
			break
		}
	}
	require.NotNil(t, pending, "never Pending with a hostIP (%d statuses seen)", len(seen()))
	assert.Empty(t, pending.PodIP, "no podIP before the sandbox exists")
	assert.Equal(t, p.Status.HostIP, pending.HostIP)
	for _, c := range pending.Conditions {
		switch c.Type {
		case corev1.PodReadyToStartContainers:
			assert.Equal(t, corev1.ConditionFalse, c.Status, "PodReadyToStartContainers")
			assert.Equal(t, "PodSandboxNotReady", c.Reason)
		case corev1.PodInitialized:
			assert.Equal(t, corev1.ConditionFalse, c.Status, "Initialized")
			assert.Equal(t, "containers with incomplete status: [setup]", c.Message)
		case corev1.ContainersReady, corev1.PodReady:
			assert.Equal(t, corev1.ConditionFalse, c.Status, string(c.Type))
			assert.Equal(t, "containers with unready status: [b a]", c.Message, "%s: spec order", c.Type)
		}
	}
	var names []string
	for _, c := range pending.ContainerStatuses {
		names = append(names, c.Name)
		if assert.NotNil(t, c.State.Waiting, "container %s waits", c.Name) {
			assert.Equal(t, "PodInitializing", c.State.Waiting.Reason, "container %s", c.Name)
		}
		assert.Empty(t, c.ContainerID, "container %s", c.Name)
	}
	assert.Equal(t, []string{"a", "b"}, names, "sorted by name")
	if assert.Len(t, pending.InitContainerStatuses, 1) {
		assert.NotNil(t, pending.InitContainerStatuses[0].State.Waiting)
	}
	require.NotNil(t, pending.StartTime)
	assert.Equal(t, pending.StartTime, p.Status.StartTime, "startTime kept from the Pending step")
}

// pod-container-image-update + pod-container-readiness: of two containers restarted in place, the one with a
// readinessProbe is unready (ContainersReady and Ready False) until its probe would pass, the one without stays
// ready, as with a kubelet; then the pod is Ready again.
func TestInPlaceRestartReadinessWindow(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	seen := statuses(t, env, ns, "window")
	pod := newPod("window", "probed", "plain")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	createPod(t, env, ns, pod)
	before := waitPod(t, env, ns, "window", "Running and Ready", runningReady)

	patchPod(t, env, ns, "window", map[string]any{"spec": map[string]any{"containers": []map[string]any{
		{"name": "probed", "image": "registry.example/probed:v2"},
		{"name": "plain", "image": "registry.example/plain:v2"},
	}}})
	after := waitPod(t, env, ns, "window", "both restarted, Ready again", func(p *corev1.Pod) bool {
		return runningReady(p) && containerStatus(t, p, "probed").RestartCount == 1 && containerStatus(t, p, "plain").RestartCount == 1
	})

	var window *corev1.PodStatus
	for _, s := range seen() {
		for _, c := range s.ContainerStatuses {
			if c.Name == "probed" && c.RestartCount == 1 && !c.Ready {
				window = &s
			}
		}
		if window != nil {
			break
		}
	}
	require.NotNil(t, window, "probed never seen restarted and unready")
	p := &corev1.Pod{Status: *window}
	assert.True(t, containerStatus(t, p, "plain").Ready, "plain has no readinessProbe: ready as soon as it runs")
	assert.EqualValues(t, 1, containerStatus(t, p, "plain").RestartCount, "both restart in the same status write")
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		c := condition(p, typ)
		if assert.NotNil(t, c, "%s", typ) {
			assert.Equal(t, corev1.ConditionFalse, c.Status, "%s", typ)
			assert.Equal(t, "ContainersNotReady", c.Reason, "%s", typ)
			assert.Equal(t, "containers with unready status: [probed]", c.Message, "%s", typ)
			assert.Equal(t, after.Generation, c.ObservedGeneration, "%s: the generation with the new images", typ)
		}
	}
	assert.Equal(t, after.Generation, window.ObservedGeneration)
	assert.Greater(t, after.Generation, before.Generation)

	// The kubelet's events of the restart, with its reasons.
	var reasons []string
	testenv.Eventually(t, podTimeout, func() (bool, error) {
		reasons = reasons[:0]
		for _, e := range env.Events(t, ns, "window") {
			if e.Reason != "Scheduled" {
				reasons = append(reasons, e.Reason)
			}
		}
		return len(reasons) >= 4, nil
	})
	assert.ElementsMatch(t, []string{"Killing", "Pulled", "Created", "Started"}, reasons)
	for _, e := range env.Events(t, ns, "window") {
		switch e.Reason {
		case "Killing":
			assert.True(t, strings.HasSuffix(e.Message, "definition changed, will be restarted"), e.Message)
		case "Created", "Started":
			assert.Equal(t, "Container "+strings.ToLower(e.Reason), e.Message)
		}
	}
}

// Each kwok node has an InternalIP of its own, and a pod's hostIP is its node's.
func TestHostIPIsTheNodes(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
	require.NoError(t, err)
	ips := map[string]string{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ips[n.Name] = a.Address
			}
		}
	}
	seenIP := map[string]bool{}
	for name, ip := range ips {
		assert.False(t, seenIP[ip], "node %s shares InternalIP %s", name, ip)
		seenIP[ip] = true
	}
	createPod(t, env, ns, newPod("host", "app"))
	p := waitPod(t, env, ns, "host", "Running and Ready", runningReady)
	assert.Equal(t, ips[p.Spec.NodeName], p.Status.HostIP)
	assert.Equal(t, []corev1.HostIP{{IP: ips[p.Spec.NodeName]}}, p.Status.HostIPs)
}
