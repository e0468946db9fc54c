package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// TestTakeoverFromOpenKruise (issue 23): a PodUnavailableBudget as OpenKruise
// v1.9 leaves it — its pods marked by the pod mutating webhook
// (pkg/webhook/pod/mutating/pod_unavailable_budget.go: only
// kruise.io/related-pub), its status as podunavailablebudget_controller.go
// updatePubStatus last wrote it with a pod the pod validating webhook just
// let through an in-place update (unavailablePods, recorded by
// pubcontrol.PodUnavailableBudgetValidatePod) — then Flotilla's controller
// and guard start. No pod is written (the old annotation key is Flotilla's
// too), the record is honoured until it expires (10 s, as OpenKruise's
// UpdatedDelayCheckTime) and counted once: the budget stays exhausted, so
// the guard refuses a deletion, and the pod already recorded is not counted
// again; after the expiry the budget has room again.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	const name = "okpub"
	cs := h.createWorkload(cloneSetGVR, "CloneSet", "okcs", templateSpec("okcs", 4))
	h.createPods("okcs", 4, refOf(cs), func(p *corev1.Pod) {
		p.Annotations = map[string]string{"kruise.io/related-pub": name}
	})
	pods := h.waitReady("okcs", 4)
	// The PUB as stored (OpenKruise's defaulting leaves maxUnavailable as given).
	p := h.pubs.Create(newPub(name, "", "1", targetRef("apps.kruise.io/v1alpha1", "CloneSet", "okcs")))
	recorded := metav1.NewTime(time.Now().Truncate(time.Second))
	okStatus := policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: p.Generation,
		UnavailablePods:    map[string]metav1.Time{pods[2].Name: recorded},
		UnavailableAllowed: 0, CurrentAvailable: 3, DesiredAvailable: 3, TotalReplicas: 4,
	}
	h.pubs.ModifyStatus(name, func(q *policyv1alpha1.PodUnavailableBudget) { q.Status = okStatus })
	writes := testenv.WatchPodWrites(t, h.Env.Kube, h.NS)

	h.start()
	h.waitScoped()
	// The budget OpenKruise left is exhausted by the recorded pod: a
	// deletion is refused while the record holds.
	err := h.deletePod(pods[0].Name)
	require.Error(t, err, "the recorded in-place update still counts against the budget")
	got := h.pubs.Get(name).Status
	assert.Equal(t, okStatus.UnavailablePods, got.UnavailablePods)
	assert.Equal(t, int32(0), got.UnavailableAllowed)
	assert.Equal(t, int32(3), got.CurrentAvailable, "the recorded pod is counted once")
	assert.Empty(t, got.DisruptedPods)

	// UpdatedDelayCheckTime later the record goes and the budget has room.
	st := h.waitStatus(name, "record expired", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return len(s.UnavailablePods) == 0 && s.UnavailableAllowed == 1 && s.CurrentAvailable == 4
	}).Status
	assert.Equal(t, int32(3), st.DesiredAvailable)
	assert.Equal(t, int32(4), st.TotalReplicas)
	require.NoError(t, writes.Untouched(0), "OpenKruise's pods are not written")
	for _, q := range h.pods("okcs") {
		assert.Equal(t, name, q.Annotations["kruise.io/related-pub"])
		assert.Empty(t, q.Annotations["pub.kruise.io/related-pub"], "no second mark written")
	}
}
