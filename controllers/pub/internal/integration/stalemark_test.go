package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// waitMarkedFor waits until every live pod app=<app> is marked for budget
// name (both annotation keys).
func (h *harness) waitMarkedFor(app, name string) {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		pods := h.pods(app)
		for _, p := range pods {
			if p.Annotations[pub.PodRelatedPubAnnotation] != name || p.Annotations[pub.PodRelatedPubAnnotationNew] != name {
				return false, nil
			}
		}
		return len(pods) > 0, nil
	})
}

// waitUnscoped waits until the scope syncers closed the scope (no budget
// left in the namespace).
func (h *harness) waitUnscoped() {
	h.T.Helper()
	testenv.Eventually(h.T, waitTimeout, func() (bool, error) {
		v, err := h.Env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), h.config, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return v.Webhooks[0].MatchConditions[0].Expression == kitwebhook.Never, nil
	})
}

// Issue 26 item 5: a budget deleted and recreated under another name
// protects the pods the old one had marked — the controller re-marks them
// and the guard takes from the new budget — instead of a healthy-looking
// status over pods whose deletes the guard lets through.
func TestRecreatedBudgetProtects(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("web", 3, nil)
	h.waitReady("web", 3)
	h.pubs.Create(newPub("old", "web", "1", totalReplicas("3")))
	h.waitScoped()
	h.waitMarkedFor("web", "old")

	require.NoError(t, h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS).Delete(context.Background(), "old", metav1.DeleteOptions{}))
	h.waitUnscoped()
	h.pubs.Create(newPub("new", "web", "1", totalReplicas("3")))
	h.waitScoped()
	h.waitStatus("new", "3 available, 1 allowed", counts(1, 3, 2, 3))
	h.waitMarkedFor("web", "new")

	require.NoError(t, h.deletePod("web-0"), "the one unit of the new budget")
	err := h.deletePod("web-1")
	require.Error(t, err, "the new budget is spent")
	assert.Contains(t, err.Error(), "PodUnavailableBudget new refuses DELETE of pod web-1")
}

// Issue 26 item 5, broken input: pods created with a related-pub
// annotation naming another budget (copied into a pod template) are
// re-marked for the budget that covers them; that budget, not the named
// one, is taken from.
func TestCopiedMarkIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("db", 2, nil)
	h.waitReady("db", 2)
	h.pubs.Create(newPub("db", "db", "1", totalReplicas("2")))
	h.waitScoped()
	h.waitStatus("db", "2 available, 1 allowed", counts(1, 2, 1, 2))

	h.createPods("web", 3, nil, func(p *corev1.Pod) {
		p.Annotations = map[string]string{pub.PodRelatedPubAnnotation: "db", pub.PodRelatedPubAnnotationNew: "db"}
	})
	h.waitReady("web", 3)
	h.pubs.Create(newPub("web", "web", "1", totalReplicas("3")))
	h.waitStatus("web", "3 available, 1 allowed", counts(1, 3, 2, 3))
	h.waitMarkedFor("web", "web")
	h.waitMarkedFor("db", "db")

	require.NoError(t, h.deletePod("web-0"))
	err := h.deletePod("web-1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PodUnavailableBudget web refuses DELETE of pod web-1")
	db := h.pubs.Get("db")
	assert.Equal(t, int32(1), db.Status.UnavailableAllowed, "the named budget was not taken from")
	assert.Empty(t, db.Status.DisruptedPods)
}
