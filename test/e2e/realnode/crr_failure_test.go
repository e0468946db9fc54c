package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// What kruise-daemon (and the agent) count as a container that cannot be recreated is a stop that fails: the
// container's state becomes Failed with "kill container error: <the runtime's error>". A new container that does
// not start or never gets ready is not a failure there: the request stays Recreating until activeDeadlineSeconds
// (TestRecreateDeadlineAndTTLOnRealNode). The real runtime refuses a stop when the container's image declares a
// stop signal it cannot parse: containerd takes the image's STOPSIGNAL at creation without checking it and fails
// every CRI StopContainer with a grace period ("failed to parse stop signal"). A stop without grace (SIGKILL, as
// the pod sandbox's stop does when the pod is deleted) still works, so the pod goes away with the test namespace.

// badStopTag is the tag of flotilla/busybox:v1's layer with an image config whose StopSignal containerd cannot parse.
const badStopTag = "badstop"

// pushBadStopImage puts <registry>/flotilla/busybox:badstop in the local registry (idempotent): v1's manifest and
// layer, its config with StopSignal "SIGFLOTILLA".
func pushBadStopImage(t *testing.T, registry string) string {
	t.Helper()
	return pushImageVariant(t, registry, badStopTag, func(c map[string]any) { c["StopSignal"] = "SIGFLOTILLA" })
}

// TestRecreateFailurePolicyOnRealNode: with orderedRecreate, app (whose stop the runtime refuses) then sidecar.
// failurePolicy Fail: the request completes at app's failure, with kruise-daemon's message in app's state and no
// message of its own, and sidecar is left alone. Ignore: app fails the same way and sidecar is still recreated.
func TestRecreateFailurePolicyOnRealNode(t *testing.T) {
	s := startCRRStack(t)
	image := pushBadStopImage(t, s.registry)
	for _, tc := range []struct {
		policy      appsv1alpha1.ContainerRecreateRequestFailurePolicyType
		sidecar     appsv1alpha1.ContainerRecreateRequestPhase
		sidecarRuns int32
	}{
		{appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, appsv1alpha1.ContainerRecreateRequestPending, 0},
		{appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore, appsv1alpha1.ContainerRecreateRequestSucceeded, 1},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			name := strings.ToLower(string(tc.policy))
			pod := barePod(t, `
metadata: {name: %[1]s}
spec:
  %[2]s
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %[3]s
    command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
  - name: sidecar
    image: %[4]s/flotilla/busybox:v1
    command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']
`, name, placement(false, "  "), image, s.registry)
			_, err := s.env.Kube.CoreV1().Pods(s.ns).Create(context.Background(), pod, metav1.CreateOptions{})
			require.NoError(t, err)
			before := s.waitPod(name, "running", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 2 &&
					p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[1].State.Running != nil
			})

			s.create(crrFor(name, name, appsv1alpha1.ContainerRecreateRequestStrategy{
				OrderedRecreate: true, FailurePolicy: tc.policy, TerminationGracePeriodSeconds: ptr.To[int64](5)}, "app", "sidecar"))
			done := s.waitCompleted(name)
			t.Logf("status: %+v", done.Status)
			assert.Empty(t, done.Status.Message, "kruise-daemon completes a failed request without a message of its own")
			assert.Equal(t, map[string]appsv1alpha1.ContainerRecreateRequestPhase{
				"app": appsv1alpha1.ContainerRecreateRequestFailed, "sidecar": tc.sidecar}, states(done))
			for _, st := range done.Status.ContainerRecreateStates {
				if st.Name == "app" {
					assert.True(t, strings.HasPrefix(st.Message, "kill container error: "), "app's message: %q", st.Message)
					assert.Contains(t, st.Message, "stop signal", "the runtime's error")
				}
			}

			after := s.getPod(name)
			assert.Equal(t, containerByName(before, "app").ContainerID, containerByName(after, "app").ContainerID, "app still runs its container")
			assert.Equal(t, int32(0), containerByName(after, "app").RestartCount)
			side := containerByName(after, "sidecar")
			assert.Equal(t, tc.sidecarRuns, side.RestartCount, "sidecar restarts")
			if tc.sidecarRuns == 0 {
				testenv.Consistently(t, 3*time.Second, func() error {
					if c := containerByName(s.getPod(name), "sidecar"); c.ContainerID != containerByName(before, "sidecar").ContainerID {
						return fmt.Errorf("sidecar recreated after the request completed: %s", c.ContainerID)
					}
					return nil
				})
			}
		})
	}
}
