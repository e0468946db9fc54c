package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Issue 26 item 9: a budget says when the guard serves it — condition
// WebhookInScope True, at its generation, once the leader has its
// namespace in the guard's scope; it follows a spec change, and the
// controller's own status writes keep it.
func TestInScopeCondition(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createPods("sc", 2, nil)
	h.waitReady("sc", 2)
	h.pubs.Create(newPub("sc", "sc", "1"))
	inScope := func(gen int64) func(*policyv1alpha1.PodUnavailableBudget) bool {
		return func(p *policyv1alpha1.PodUnavailableBudget) bool {
			c := apimeta.FindStatusCondition(p.Status.Conditions, kitwebhook.InScopeCondition)
			return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen && p.Status.CurrentAvailable == 2
		}
	}
	p := h.pubs.WaitFor("sc", "in scope at generation 1, counted", inScope(1))
	h.waitScoped()
	assert.Equal(t, kitwebhook.ReasonInScope, apimeta.FindStatusCondition(p.Status.Conditions, kitwebhook.InScopeCondition).Reason)

	h.pubs.Modify("sc", func(p *policyv1alpha1.PodUnavailableBudget) { v := intstr.FromInt32(2); p.Spec.MaxUnavailable = &v })
	h.pubs.WaitFor("sc", "in scope at generation 2, recounted", func(p *policyv1alpha1.PodUnavailableBudget) bool {
		return inScope(2)(p) && p.Status.ObservedGeneration == 2
	})
}
