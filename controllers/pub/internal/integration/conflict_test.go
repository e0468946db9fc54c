package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
)

// Issue 25 row 2: a second budget for one CloneSet, or one whose selector
// overlaps another's (same keys), is refused naming the first; budgets
// over other pods are admitted.
func TestSecondBudgetRejected(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.createWorkload(cloneSetGVR, "CloneSet", "web", templateSpec("web", 3))
	h.pubs.Create(newPub("first", "", "1", targetRef("apps.kruise.io/v1alpha1", "CloneSet", "web")))

	err := h.createPub(newPub("second", "", "1", targetRef("apps.kruise.io/v1alpha1", "CloneSet", "web")))
	require.Error(t, err, "a second budget for CloneSet web")
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.targetRef")
	assert.Contains(t, err.Error(), "PodUnavailableBudget "+h.NS+"/first already protects")
	_, err = h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS).Get(context.Background(), "second", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the refused budget was not stored: %v", err)

	h.pubs.Create(newPub("sel-a", "db", "1"))
	err = h.createPub(newPub("sel-b", "", "1", func(p *policyv1alpha1.PodUnavailableBudget) {
		p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "cache"}}}}
	}))
	require.Error(t, err, "a selector over the same key that can match the same pods")
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.selector")
	assert.Contains(t, err.Error(), "PodUnavailableBudget "+h.NS+"/sel-a")

	h.createWorkload(cloneSetGVR, "CloneSet", "api", templateSpec("api", 3))
	h.pubs.Create(newPub("api", "", "1", targetRef("apps.kruise.io/v1alpha1", "CloneSet", "api")))
	h.pubs.Create(newPub("cache", "cache", "1"))
	h.pubs.Create(newPub("db-primary", "", "1", func(p *policyv1alpha1.PodUnavailableBudget) {
		// Other label keys: admitted, as OpenKruise admits them.
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db", "role": "primary"}}
	}))
}

func (h *harness) createPub(p *policyv1alpha1.PodUnavailableBudget) error {
	_, err := h.Client.PolicyV1alpha1().PodUnavailableBudgets(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
	return err
}
