// Package integration runs the real ContainerRecreateRequest reconciler in-process against the local control
// plane (kit/testenv) with kwok pods. The tests play the node agent's part (the phase it writes) where a step
// needs it; the agent itself is tested on the real node (test/e2e/realnode TestContainerRecreate*).
package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/containerrecreate/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const waitTimeout = 60 * time.Second

type harness struct {
	*lab.Lab
	node string
	crrs *testenv.Objects[*appsv1alpha1.ContainerRecreateRequest]
	pods *testenv.Objects[*corev1.Pod]
}

func newHarness(t *testing.T) *harness {
	h := &harness{Lab: lab.New(t, waitTimeout)}
	h.node = h.Env.KwokNodes(t, h.NS, 1, nil)[0]
	h.crrs = testenv.ObjectsOf(t, h.Client.AppsV1alpha1().ContainerRecreateRequests(h.NS), waitTimeout)
	h.crrs.Describe = func(c *appsv1alpha1.ContainerRecreateRequest) string {
		b, _ := json.Marshal(map[string]any{"labels": c.Labels, "annotations": c.Annotations, "finalizers": c.Finalizers, "status": c.Status})
		return string(b)
	}
	h.pods = testenv.ObjectsOf(t, h.Env.Kube.CoreV1().Pods(h.NS), waitTimeout)
	h.pods.Describe = func(p *corev1.Pod) string {
		b, _ := json.Marshal(p.Status.Conditions)
		return string(b)
	}
	return h
}

func (h *harness) startController() (stop func()) {
	h.T.Helper()
	d := h.Deps("containerrecreate-test", h.Gates([]featuregate.Feature{features.KruiseDaemon}, map[featuregate.Feature]bool{features.KruiseDaemon: true}))
	c, err := controller.New(d)
	require.NoError(h.T, err)
	return h.Start(c, 2, d)
}

// runningPod creates a pod with containers app (with an exec preStop) and sidecar on the test's kwok node, with
// the KruisePodReady readiness gate held True, and waits until kwok runs it.
func (h *harness) runningPod(name string) *corev1.Pod {
	h.T.Helper()
	h.pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      h.node,
			Tolerations:                   []corev1.Toleration{testenv.TestNodeToleration()},
			TerminationGracePeriodSeconds: ptr.To[int64](7),
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}},
			Containers: []corev1.Container{
				{Name: "app", Image: "busybox", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo bye"}}}}},
				{Name: "sidecar", Image: "busybox"},
			},
		},
	})
	h.pods.WaitFor(name, "running with container IDs", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 2 && p.Status.ContainerStatuses[0].ContainerID != "" && p.Status.ContainerStatuses[1].ContainerID != ""
	})
	// What OpenKruise's pod-readiness controller does for a pod with the gate (not run here).
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Patch(context.Background(), name, types.StrategicMergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"KruisePodReady","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	require.NoError(h.T, err)
	return h.pods.WaitFor(name, "KruisePodReady True", func(p *corev1.Pod) bool {
		return testenv.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionTrue
	})
}

func crr(name, pod string, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	out := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: pod},
	}
	for _, c := range containers {
		out.Spec.Containers = append(out.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return out
}

// setPhase writes the phase as the node agent does.
func (h *harness) setPhase(name string, phase appsv1alpha1.ContainerRecreateRequestPhase) {
	h.T.Helper()
	h.crrs.ModifyStatus(name, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Status.Phase = phase })
}

func (h *harness) waitCompleted(name, message string) *appsv1alpha1.ContainerRecreateRequest {
	h.T.Helper()
	return h.crrs.WaitFor(name, "Completed: "+message, func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted && c.Status.CompletionTime != nil && c.Status.Message == message
	})
}

func (h *harness) delete(name string) {
	h.T.Helper()
	require.NoError(h.T, h.Client.AppsV1alpha1().ContainerRecreateRequests(h.NS).Delete(context.Background(), name, metav1.DeleteOptions{}))
}

// waitStamped waits until the controller has accepted the request (active label).
func (h *harness) waitStamped(name string) *appsv1alpha1.ContainerRecreateRequest {
	h.T.Helper()
	return h.crrs.WaitFor(name, "stamped", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey] == "true"
	})
}

// unreadyRequest starts the controller and a running pod p, and creates the request r for its container app with
// unreadyGracePeriodSeconds grace, waiting until it is accepted.
func (h *harness) unreadyRequest(grace int64) {
	h.T.Helper()
	h.startController()
	h.runningPod("p")
	r := crr("r", "p", "app")
	r.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To(grace)}
	h.crrs.Create(r)
	h.waitStamped("r")
}
