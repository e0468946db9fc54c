package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

var (
	buildOnce   sync.Once
	clonesetBin string
	buildErr    error
)

// cloneSetController runs Flotilla's CloneSet controller, built from the
// working tree, as a process limited to the test's namespace (other
// modules' internal packages cannot be imported, so it cannot run
// in-process here). Its retry back-off is capped at 5s so a refused
// update is retried within the test's time.
func (h *harness) cloneSetController() {
	h.T.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pub-it-")
		if err != nil {
			buildErr = err
			return
		}
		clonesetBin = filepath.Join(dir, "cloneset-controller")
		cmd := exec.Command("go", "build", "-o", clonesetBin, "./controllers/cloneset/cmd/cloneset-controller")
		cmd.Dir = h.Env.RepoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cloneset-controller: %v\n%s", err, out)
		}
	})
	require.NoError(h.T, buildErr)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, clonesetBin, "--kubeconfig="+h.Env.KubeconfigPath, "--namespace="+h.NS,
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--rate-limiter-max-delay=5s", "--log-format=console")
	logf, err := os.Create(filepath.Join(h.T.TempDir(), "cloneset.log"))
	require.NoError(h.T, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(h.T, cmd.Start())
	h.T.Cleanup(func() { cancel(); _ = cmd.Wait(); _ = logf.Close() })
}

func (h *harness) cloneSet(name string) *unstructured.Unstructured {
	u, err := h.Env.Dynamic().Resource(cloneSetGVR).Namespace(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(h.T, err)
	return u
}

func (h *harness) waitCloneSet(name, what string, cond func(status map[string]any, generation int64) bool) {
	h.T.Helper()
	testenv.Eventually(h.T, 4*time.Minute, func() (bool, error) {
		u := h.cloneSet(name)
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		if cond(st, u.GetGeneration()) {
			return true, nil
		}
		return false, fmt.Errorf("CloneSet %s: %s (status %v)", name, what, st)
	})
}

func num(st map[string]any, k string) int64 {
	v, _, _ := unstructured.NestedInt64(st, k)
	return v
}

// Item 6 with Flotilla's CloneSet controller: an in-place rollout
// (PodUnavailableBudgetUpdateGate) and a recreate rollout (its deletes,
// PodUnavailableBudgetDeleteGate) over pods a budget of one protects,
// with the CloneSet itself allowed to take all of them at once
// (maxUnavailable 100%): both proceed only as the budget allows —
// availability never below desiredAvailable — and complete.
func TestCloneSetRolloutsRespectBudget(t *testing.T) {
	h := newHarness(t)
	h.start()
	const n = 4
	for _, typ := range []string{"InPlaceIfPossible", "ReCreate"} {
		name := map[string]string{"InPlaceIfPossible": "inplace", "ReCreate": "recreate"}[typ]
		spec := fmt.Sprintf(`{"replicas":%d,"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},"spec":{"containers":[{"name":"main","image":%q}]}},"updateStrategy":{"type":%q,"maxUnavailable":"100%%","maxSurge":0}}`,
			n, name, name, imageV1, typ)
		h.createWorkload(cloneSetGVR, "CloneSet", name, spec)
		h.pubs.Create(newPub(name, "", "1", targetRef("apps.kruise.io/v1alpha1", "CloneSet", name)))
	}
	h.cloneSetController()
	h.waitScoped()
	for _, name := range []string{"inplace", "recreate"} {
		h.waitReady(name, n)
		h.waitStatus(name, "1 allowed of 4", counts(1, n, n-1, n))
		h.waitMarked(name)
	}
	watchers := map[string]*availabilityWatcher{"inplace": h.watchAvailability("inplace"), "recreate": h.watchAvailability("recreate")}
	for _, name := range []string{"inplace", "recreate"} {
		_, err := h.Env.Dynamic().Resource(cloneSetGVR).Namespace(h.NS).Patch(context.Background(), name, types.JSONPatchType,
			[]byte(fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, imageV2)), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"inplace", "recreate"} {
		h.waitCloneSet(name, "rollout complete", func(st map[string]any, gen int64) bool {
			return num(st, "observedGeneration") == gen && num(st, "updatedReadyReplicas") == n && num(st, "readyReplicas") == n && num(st, "replicas") == n
		})
		assert.GreaterOrEqual(t, watchers[name].Lowest(), n-1, "%s: availability never below desiredAvailable", name)
		for _, p := range h.pods(name) {
			assert.Equal(t, imageV2, p.Spec.Containers[0].Image, p.Name)
		}
	}
	refused := 0
	events, err := h.Env.Kube.CoreV1().Events(h.NS).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		if e.Reason == "PubPreventPodDeletion" {
			refused++
		}
	}
	assert.Positive(t, refused, "the budget did refuse some of the CloneSet's updates and deletes")
}
