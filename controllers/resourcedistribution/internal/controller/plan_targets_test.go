package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func nsList(names ...string) []appsv1alpha1.ResourceDistributionNamespace {
	out := make([]appsv1alpha1.ResourceDistributionNamespace, 0, len(names))
	for _, n := range names {
		out = append(out, appsv1alpha1.ResourceDistributionNamespace{Name: n})
	}
	return out
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestTargetNamespaces(t *testing.T) {
	nss := []*corev1.Namespace{
		namespace("a", map[string]string{"team": "x"}),
		namespace("b", map[string]string{"team": "y"}),
		namespace("c", nil),
		namespace("kube-system", nil),
	}
	cases := []struct {
		name    string
		targets appsv1alpha1.ResourceDistributionTargets
		want    []string
	}{
		{"nothing selected", appsv1alpha1.ResourceDistributionTargets{}, []string{}},
		{"included, one missing", appsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("a", "gone")}}, []string{"a", "gone"}},
		{"selector", appsv1alpha1.ResourceDistributionTargets{
			NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}}, []string{"a"}},
		{"all, kube-system included as in OpenKruise v1.9", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true},
			[]string{"a", "b", "c", "kube-system"}},
		{"all minus excluded", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			ExcludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("kube-system", "b")}}, []string{"a", "c"}},
		{"union of included and selector, excluded wins", appsv1alpha1.ResourceDistributionTargets{
			IncludedNamespaces:     appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("c")},
			NamespaceLabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}},
			ExcludedNamespaces:     appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("b")}}, []string{"a", "c"}},
		{"all and included together is the union", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true,
			IncludedNamespaces: appsv1alpha1.ResourceDistributionTargetNamespaces{List: nsList("new")}}, []string{"a", "b", "c", "kube-system", "new"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := newTargetSelector(&tc.targets)
			require.NoError(t, err)
			assert.Equal(t, tc.want, sel.targetNamespaces(nss))
		})
	}
}
