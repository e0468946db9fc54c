package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// calls is how many admission requests the guard answered.
func (h *harness) calls() float64 { h.T.Helper(); return h.wh.Requests(webhook.HandlerName) }

// Item 5: the API server calls the guard only for pods marked as related
// to a budget; unrelated pods' deletes and updates make no call.
func TestUnrelatedPodsMakeNoCall(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("free", 3, nil)
	h.createPods("kept", 2, nil)
	h.waitReady("free", 3)
	h.waitReady("kept", 2)
	h.pubs.Create(newPub("kept", "kept", "1"))
	h.waitScoped()
	h.waitStatus("kept", "pods counted", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool { return s.CurrentAvailable == 2 })
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods("kept") {
			if p.Annotations["kruise.io/related-pub"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	before := h.calls()
	h.PatchPod("free-0", `{"metadata":{"labels":{"x":"y"}}}`)
	for _, name := range []string{"free-0", "free-1", "free-2"} {
		require.NoError(t, h.deletePod(name))
	}
	assert.Equal(t, before, h.calls(), "unrelated pods: no webhook call")
	require.NoError(t, h.deletePod("kept-0"))
	assert.Greater(t, h.calls(), before, "a related pod's delete is guarded")
}

// Item 5 with the webhook process stopped, failurePolicy Fail: unrelated
// pods still delete; a protected pod's delete is rejected naming the webhook.
func TestWebhookDownFail(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("free", 1, nil)
	h.createPods("kept", 2, nil)
	h.waitReady("kept", 2)
	h.pubs.Create(newPub("kept", "kept", "1"))
	h.waitScoped()
	h.waitMarked("kept")
	h.stopWH()
	require.NoError(t, h.deletePod("free-0"), "an unrelated pod does not wait on the webhook")
	err := h.deletePod("kept-0")
	require.Error(t, err, "Fail: a protected pod cannot be deleted while the guard is down")
	assert.Contains(t, err.Error(), webhook.PodWebhookName)
	t.Logf("rejection: %v", err)
}

// failurePolicy Ignore: with the guard down, protected pods delete too.
func TestWebhookDownIgnore(t *testing.T) {
	h := newHarness(t)
	h.policy = admissionregistrationv1.Ignore
	h.start()
	h.createPods("kept", 2, nil)
	h.waitReady("kept", 2)
	h.pubs.Create(newPub("kept", "kept", "1"))
	h.waitScoped()
	h.waitMarked("kept")
	h.stopWH()
	require.NoError(t, h.deletePod("kept-0"))
	require.NoError(t, h.deletePod("kept-1"), "Ignore: the budget is not enforced while the guard is down")
}

func (h *harness) waitMarked(app string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		pods := h.pods(app)
		for _, p := range pods {
			if p.Annotations["kruise.io/related-pub"] == "" {
				return false, nil
			}
		}
		return len(pods) > 0, nil
	})
}
