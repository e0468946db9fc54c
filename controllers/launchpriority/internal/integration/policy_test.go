package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const serviceAccount = "system:serviceaccount:flotilla-system:launchpriority-controller"

// launchpriority-controller's pod writes (RBAC: pods and pods/status patch) are pinned by the policy of
// deploy/components/launchpriority/policy.yaml to its annotation and its condition: the controller, run as its
// ServiceAccount, completes a pod and reports one created without its barrier; any other pod write as that
// ServiceAccount is refused. Impersonation keeps the admin's system:masters group: RBAC admits, only the policy
// decides.
func TestControllerPodWritesArePinned(t *testing.T) {
	h := newHarness(t)
	h.Env.ApplyPolicies(t, "deploy/components/launchpriority/policy.yaml")
	// Created before the test's webhook serves: no barrier, which the controller reports.
	_, err := h.create(h.pod("unordered", ordered, nil, "a", "b"))
	require.NoError(t, err)
	h.serveWebhook(admissionregistrationv1.Fail)
	asController := kubernetes.NewForConfigOrDie(h.Env.ActingAs(serviceAccount, nil))

	// Refusals first: each attempt changes the pod, so that a patch admitted before the policy loaded cannot make
	// later attempts no-ops.
	_, err = h.create(h.pod("other", map[string]string{"team": "a"}, nil, "a"))
	require.NoError(t, err)
	attempt := 0
	refused := func(what, want, subresource, format string) {
		t.Helper()
		testenv.Refused(t, what, want, func() error {
			attempt++
			var sub []string
			if subresource != "" {
				sub = []string{subresource}
			}
			_, err := asController.CoreV1().Pods(h.NS).Patch(context.Background(), "other", types.StrategicMergePatchType,
				[]byte(fmt.Sprintf(format, attempt)), metav1.PatchOptions{}, sub...)
			return err
		})
	}
	refused("another annotation", "only the container-launch-priority-completed annotation", "", `{"metadata":{"annotations":{"team":"b-%d"}}}`)
	refused("a label", "spec, labels, finalizers or owner references", "", `{"metadata":{"labels":{"x":"y-%d"}}}`)
	refused("another condition", "only the ContainerLaunchBarrier condition", "status",
		`{"status":{"conditions":[{"type":"Other","status":"True","reason":"R%d"}]}}`)

	// The controller's own writes, as its ServiceAccount.
	d := h.Deps("launchpriority-test", nil)
	d.Kube = asController
	c, err := controller.New(d)
	require.NoError(t, err)
	h.Start(c, 2, d)
	_, err = h.create(h.pod("done", ordered, nil, "a", "b"))
	require.NoError(t, err)
	h.waitKeys("done", "p_0")
	h.setReady("done", map[string]bool{"a": true, "b": false})
	testenv.Eventually(t, timeout, func() (bool, error) {
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "done", metav1.GetOptions{})
		return err == nil && got.Annotations["apps.kruise.io/container-launch-priority-completed"] == "true", err
	})
	testenv.Eventually(t, timeout, func() (bool, error) {
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(context.Background(), "unordered", metav1.GetOptions{})
		return err == nil && testenv.ConditionStatus(got, controller.ConditionType) == corev1.ConditionFalse, err
	})
}
