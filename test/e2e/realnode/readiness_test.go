package realnode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const testGate = "flotilla.dev/e2e-gate"

// TestReadinessGateOnRealNode flips a readiness-gate condition the way a gate owner should (only its own
// condition, never Ready) and checks that the node's kubelet recomputes Ready from it, in both directions, with
// the kubelet's reasons and messages; on kwok nodes the pod-ready-recompute stage must do the same.
func TestReadinessGateOnRealNode(t *testing.T) {
	env := testenv.Get(t)
	onEachNodeKind(t, env, func(t *testing.T, registry string, kwok bool) { readinessGate(t, env, registry, kwok) })
}

func readinessGate(t *testing.T, env *testenv.Env, registry string, kwok bool) {
	ns := env.Namespace(t)
	ctx := context.Background()
	pod := barePod(t, `
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  %s
  readinessGates: [{conditionType: %s}]
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s/flotilla/busybox:v1
    command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']`, placement(kwok, "  "), testGate, registry)
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	rec := record(t, env, ns)

	ready := func(status corev1.ConditionStatus, reason, message string) func() (bool, error) {
		return func() (bool, error) {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if testenv.ConditionStatus(p, corev1.ContainersReady) != corev1.ConditionTrue {
				return false, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					return c.Status == status && c.Reason == reason && c.Message == message, nil
				}
			}
			return false, nil
		}
	}
	setGate := func(status corev1.ConditionStatus) {
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`,
			testGate, status, time.Now().UTC().Format(time.RFC3339))
		_, err := env.Kube.CoreV1().Pods(ns).Patch(ctx, "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
	}

	testenv.Eventually(t, startTimeout, ready(corev1.ConditionFalse, "ReadinessGatesNotReady",
		fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", testGate)))
	setGate(corev1.ConditionTrue)
	testenv.Eventually(t, time.Minute, ready(corev1.ConditionTrue, "", ""))
	setGate(corev1.ConditionFalse)
	testenv.Eventually(t, time.Minute, ready(corev1.ConditionFalse, "ReadinessGatesNotReady",
		fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but False", testGate)))
	setGate(corev1.ConditionTrue)
	testenv.Eventually(t, time.Minute, ready(corev1.ConditionTrue, "", ""))

	p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
	require.NoError(t, err)
	for i, s := range rec.of(p.UID) {
		t.Logf("step %d: %s", i, s)
	}
}
