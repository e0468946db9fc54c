package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Item 2: the status fields as OpenKruise writes them — counts,
// observedGeneration, disruptedPods and unavailablePods with their
// timestamps and expiry (20s for a disruption that did not happen, event
// NotDeleted; 10s for an update) — written only when they change.
func TestStatus(t *testing.T) {
	h := newHarness(t)
	h.start()
	ctx := context.Background()
	h.createPods("st", 4, nil)
	h.waitReady("st", 4)
	h.pubs.Create(newPub("st", "st", "2", totalReplicas("4")))
	h.waitScoped()
	p := h.waitStatus("st", "2 allowed", counts(2, 4, 2, 4))
	assert.Equal(t, int64(1), p.Status.ObservedGeneration)
	// The leader's WebhookInScope condition is a status write of its own.
	h.pubs.WaitFor("st", "in the guard's scope", func(p *policyv1alpha1.PodUnavailableBudget) bool {
		return apimeta.IsStatusConditionTrue(p.Status.Conditions, kitwebhook.InScopeCondition)
	})

	// Nothing changed: an event that enqueues the budget writes nothing.
	p = h.pubs.Modify("st", func(p *policyv1alpha1.PodUnavailableBudget) { p.Labels = map[string]string{"touched": "yes"} })
	rv := p.ResourceVersion
	testenv.Consistently(t, 3*time.Second, func() error {
		if got := h.pubs.Get("st").ResourceVersion; got != rv {
			return fmt.Errorf("status rewritten without a change: %s -> %s", rv, got)
		}
		return nil
	})

	// A spec change: new generation observed.
	p = h.pubs.Modify("st", func(p *policyv1alpha1.PodUnavailableBudget) { v := intstr.FromInt32(1); p.Spec.MaxUnavailable = &v })
	h.waitStatus("st", "maxUnavailable 1", counts(1, 4, 3, 4))
	assert.Equal(t, int64(2), h.pubs.Get("st").Status.ObservedGeneration)

	// An in-place update is recorded in unavailablePods for 10s.
	require.NoError(t, h.setImage("st-0", imageV2))
	p = h.pubs.Get("st")
	at, ok := p.Status.UnavailablePods["st-0"]
	require.True(t, ok)
	assert.WithinDuration(t, time.Now(), at.Time, 5*time.Second)
	h.waitStatus("st", "st-0 recorded", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return s.CurrentAvailable == 3 && s.UnavailableAllowed == 0
	})
	p = h.waitStatus("st", "update record expired after 10s", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return len(s.UnavailablePods) == 0 && s.CurrentAvailable == 4
	})
	assert.GreaterOrEqual(t, time.Since(at.Time), 9*time.Second)

	// An eviction the guard allowed but a PodDisruptionBudget then refused
	// (whether or not kube-controller-manager computed its status yet):
	// the disruption never happens, the record expires after 20s with a
	// NotDeleted event.
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrIOS(intstr.FromString("100%")),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "st"}},
		},
	}
	_, err := h.Env.Kube.PolicyV1().PodDisruptionBudgets(h.NS).Create(ctx, pdb, metav1.CreateOptions{})
	require.NoError(t, err)
	err = h.evict("st-1", false)
	require.Error(t, err)
	assert.True(t, apierrors.IsTooManyRequests(err), "the PDB refuses: %v", err)
	assert.Contains(t, err.Error(), "disruption budget", "refused by the PDB, after the guard admitted it")
	p = h.pubs.Get("st")
	require.Contains(t, p.Status.DisruptedPods, "st-1", "the guard recorded the eviction it admitted")
	h.waitStatus("st", "disruption record expired", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return len(s.DisruptedPods) == 0 && s.CurrentAvailable == 4 && s.UnavailableAllowed == 1
	})
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, e := range h.Events("st-1") {
			if e.Reason == "NotDeleted" {
				return true, nil
			}
		}
		return false, nil
	})

	// A deleted pod is recorded until it is gone, then counted out.
	require.NoError(t, h.deletePod("st-2"))
	h.waitStatus("st", "st-2 gone and its record dropped", func(s policyv1alpha1.PodUnavailableBudgetStatus) bool {
		return counts(0, 3, 3, 4)(s) && len(s.DisruptedPods) == 0
	})
}

func ptrIOS(v intstr.IntOrString) *intstr.IntOrString { return &v }
