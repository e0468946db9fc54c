package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// TestRejectedAtAdmission: the CRD's schema and CEL rules refuse what OpenKruise's webhook refuses, each
// message naming the field. No controller runs: admission alone decides.
func TestRejectedAtAdmission(t *testing.T) {
	h := newHarness(t)
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}
	}
	rd := func(resource any, mutate ...func(*appsv1alpha1.ResourceDistribution)) *appsv1alpha1.ResourceDistribution {
		out := h.bySelector(resource)
		out.GenerateName, out.Name = h.id+"-", ""
		for _, m := range mutate {
			m(out)
		}
		return out
	}
	list := func(names ...string) appsv1alpha1.ResourceDistributionTargetNamespaces {
		var l appsv1alpha1.ResourceDistributionTargetNamespaces
		for _, n := range names {
			l.List = append(l.List, appsv1alpha1.ResourceDistributionNamespace{Name: n})
		}
		return l
	}
	lab.RefusedAtAdmission(t, h.Client.AppsV1alpha1().ResourceDistributions().Create, []lab.Refusal[*appsv1alpha1.ResourceDistribution]{
		{Name: "resource without a name", Object: rd(map[string]any{"apiVersion": "v1", "kind": "Secret"}),
			Want: "spec.resource.metadata.name is required"},
		{Name: "unsupported kind", Object: rd(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}),
			Want: "spec.resource: unsupported resource kind, only v1 Secret and v1 ConfigMap are supported"},
		{Name: "invalid resource name", Object: rd(cm("Not_A_Name")), Want: "spec.resource.metadata.name must be a DNS subdomain"},
		{Name: "namespace both included and excluded", Object: rd(cm("c"), func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.IncludedNamespaces, r.Spec.Targets.ExcludedNamespaces = list("a", "b"), list("b")
		}), Want: "spec.targets: ambiguous targets, a namespace is in both includedNamespaces.list and excludedNamespaces.list"},
		{Name: "invalid namespace name", Object: rd(cm("c"), func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.IncludedNamespaces = list("Bad_NS")
		}), Want: "spec.targets.includedNamespaces.list[0].name"},
		{Name: "selector operator", Object: rd(cm("c"), func(r *appsv1alpha1.ResourceDistribution) {
			r.Spec.Targets.NamespaceLabelSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}), Want: "spec.targets.namespaceLabelSelector.matchExpressions: operator must be In or NotIn with values"},
	})

	// apiVersion, kind and name of the resource are immutable (OpenKruise's webhook: "resource apiVersion,
	// kind, and name are immutable").
	created := h.rds.Create(h.bySelector(cm("fixed")))
	for name, resource := range map[string]any{
		"renamed":      cm("other"),
		"kind changed": map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "fixed"}},
	} {
		next := created.DeepCopy()
		next.Spec.Resource = raw(t, resource)
		_, err := h.Client.AppsV1alpha1().ResourceDistributions().Update(context.Background(), next, metav1.UpdateOptions{})
		require.Error(t, err, name)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, "spec.resource: apiVersion, kind and metadata.name are immutable", name)
	}
	// Changing the content is an update like any other; so is naming a namespace in includedNamespaces while
	// allNamespaces is set (OpenKruise accepts the union too).
	next := created.DeepCopy()
	data := cm("fixed")
	data["data"] = map[string]any{"k": "v"}
	next.Spec.Resource = raw(t, data)
	next.Spec.Targets.AllNamespaces = true
	next.Spec.Targets.IncludedNamespaces = list("x")
	next.Spec.Targets.ExcludedNamespaces = list("y")
	_, err := h.Client.AppsV1alpha1().ResourceDistributions().Update(context.Background(), next, metav1.UpdateOptions{})
	require.NoError(t, err)
}
