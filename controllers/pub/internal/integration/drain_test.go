package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Item 3 with kubectl drain on a kwok node of the test's own: the first
// eviction passes, the others are refused with 429 and retried by drain
// (the refusal names the budget), so drain waits instead of emptying the
// node; it gives up at its timeout with one pod evicted.
func TestDrain(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed")
	}
	h := newHarness(t)
	h.start()
	node := h.Env.KwokNodes(t, h.NS, 1, nil)[0]
	h.createPods("drain", 3, nil, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
		p.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
	})
	h.waitReady("drain", 3)
	h.pubs.Create(newPub("drain", "drain", "1", totalReplicas("3")))
	h.waitScoped()
	h.waitStatus("drain", "1 allowed", counts(1, 3, 2, 3))
	h.waitMarked("drain")

	out, err := exec.Command("kubectl", "--kubeconfig", h.Env.KubeconfigPath, "drain", node,
		"--force", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=15s").CombinedOutput()
	t.Logf("kubectl drain: %v\n%s", err, out)
	require.Error(t, err, "drain cannot finish within the budget")
	assert.Contains(t, string(out), "PodUnavailableBudget drain refuses EVICT")
	assert.Contains(t, strings.ToLower(string(out)), "will retry", "drain retries a 429")
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.pods("drain")) == 2, nil })
	n, err := h.Env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, n.Spec.Unschedulable, "cordoned")
}
