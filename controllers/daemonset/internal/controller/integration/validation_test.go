package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// TestSelectorImmutable: patching the selector together with a template
// label (so the selector still matches the template) is rejected by the
// CRD, as OpenKruise's webhook rejects it: accepted, the pods the new
// selector no longer matches would be released and replaced, two daemons
// per node. The fields OpenKruise lets change still change: the template
// label alone rolls the pods over, one per node.
func TestSelectorImmutable(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("sel", 2)
	h.waitStatus("sel", "settled", settled(2))

	ds := h.sets.Get("sel")
	ds.Spec.Selector.MatchLabels["track"] = "v2"
	ds.Spec.Template.Labels["track"] = "v2"
	_, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Update(context.Background(), ds, metav1.UpdateOptions{})
	require.Error(t, err, "a selector change must be rejected")
	assert.True(t, apierrors.IsInvalid(err), "rejected as invalid: %v", err)
	assert.Contains(t, err.Error(), "spec.selector is immutable")
	assert.Equal(t, map[string]string{"app": "sel"}, h.sets.Get("sel").Spec.Selector.MatchLabels)
	for n, p := range h.waitPlaced("sel", nodes, "") {
		assert.Equal(t, before[n].UID, p.UID, "node %s keeps its pod", n)
	}

	// The template (a label too) may change; the selector stays.
	h.sets.Modify("sel", func(ds *appsv1alpha1.DaemonSet) { ds.Spec.Template.Labels["track"] = "v2" })
	ds = h.waitStatus("sel", "rolled over", func(s appsv1alpha1.DaemonSetStatus) bool {
		return settled(2)(s) && s.DaemonSetHash != before[nodes[0]].Labels["controller-revision-hash"]
	})
	h.waitPlaced("sel", nodes, ds.Status.DaemonSetHash)
}

// TestRollingUpdateBudgetValidation: a rolling update whose budgets resolve
// to maxUnavailable 0 and maxSurge 0 — `maxUnavailable: 0` alone,
// `maxSurge: 0` alone, both 0 — is rejected with OpenKruise's "cannot be 0
// when maxSurge is 0", at creation and at update; the controller no longer
// quietly uses 1. Without either (the default 1) or with the deprecated
// Surging type (maxSurge defaults to 1) the spec is valid.
func TestRollingUpdateBudgetValidation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	zeroPct := intstr.FromString("0%")
	for _, tc := range []struct {
		name  string
		ru    appsv1alpha1.RollingUpdateDaemonSet
		valid bool
	}{
		{name: "maxunavailable-0", ru: appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &zero}},
		{name: "maxsurge-0", ru: appsv1alpha1.RollingUpdateDaemonSet{MaxSurge: &zero}},
		{name: "both-0", ru: appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &zeroPct, MaxSurge: &zero}},
		{name: "inplace-maxunavailable-0", ru: appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.InplaceRollingUpdateType, MaxUnavailable: &zero}},
		{name: "neither", ru: appsv1alpha1.RollingUpdateDaemonSet{}, valid: true},
		{name: "maxsurge-1-maxunavailable-0", ru: appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &one}, valid: true},
		{name: "surging-maxunavailable-0", ru: appsv1alpha1.RollingUpdateDaemonSet{Type: appsv1alpha1.SurgingRollingUpdateType, MaxUnavailable: &zero}, valid: true},
	} {
		ds := h.newDS(tc.name, rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { *r = tc.ru }))
		_, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Create(ctx, ds, metav1.CreateOptions{})
		if tc.valid {
			assert.NoError(t, err, tc.name)
			continue
		}
		if assert.Error(t, err, "%s: must be rejected", tc.name) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", tc.name, err)
			assert.Contains(t, err.Error(), "spec.updateStrategy.rollingUpdate.maxUnavailable cannot be 0 when maxSurge is 0", tc.name)
		}
	}

	// At update too: a valid DaemonSet cannot be changed to maxUnavailable 0 alone.
	h.sets.Create(h.newDS("upd"))
	ds := h.sets.Get("upd")
	ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &zero}
	_, err := h.Client.AppsV1alpha1().DaemonSets(h.NS).Update(ctx, ds, metav1.UpdateOptions{})
	if assert.Error(t, err, "the update must be rejected") {
		assert.Contains(t, err.Error(), "cannot be 0 when maxSurge is 0")
	}
}
