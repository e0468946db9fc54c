package apis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	applyappsv1alpha1 "github.com/flotilla-dev/flotilla/client/applyconfiguration/apps/v1alpha1"
	applypolicyv1alpha1 "github.com/flotilla-dev/flotilla/client/applyconfiguration/policy/v1alpha1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
)

// The generated typed clients work against the CRDs: create with defaults,
// the scale subresource, and server-side apply with apply configurations.
func TestTypedClients(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "typed", Namespace: h.ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "typed"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "typed"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.25"}}},
			},
		},
	}
	created, err := h.cs.AppsV1alpha1().CloneSets(h.ns).Create(ctx, cs, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *created.Spec.Replicas)
	assert.Equal(t, appsv1alpha1.RecreateCloneSetUpdateStrategyType, created.Spec.UpdateStrategy.Type)
	assert.Equal(t, intstr.FromString("20%"), *created.Spec.UpdateStrategy.MaxUnavailable)
	assert.Equal(t, intstr.FromInt32(0), *created.Spec.UpdateStrategy.Partition)
	assert.Equal(t, intstr.FromInt32(0), *created.Spec.UpdateStrategy.MaxSurge)
	assert.Equal(t, int32(10), *created.Spec.RevisionHistoryLimit)

	sc, err := h.cs.AppsV1alpha1().CloneSets(h.ns).GetScale(ctx, "typed", metav1.GetOptions{})
	require.NoError(t, err)
	sc.Spec.Replicas = 3
	_, err = h.cs.AppsV1alpha1().CloneSets(h.ns).UpdateScale(ctx, "typed", sc, metav1.UpdateOptions{})
	require.NoError(t, err)

	// server-side apply of a PUB through the generated apply configuration
	pub := applypolicyv1alpha1.PodUnavailableBudget("typed", h.ns).
		WithSpec(applypolicyv1alpha1.PodUnavailableBudgetSpec().
			WithSelector(applymetav1.LabelSelector().WithMatchLabels(map[string]string{"app": "typed"})).
			WithMaxUnavailable(intstr.FromString("25%")))
	applied, err := h.cs.PolicyV1alpha1().PodUnavailableBudgets(h.ns).Apply(ctx, pub, metav1.ApplyOptions{FieldManager: "flotilla-e2e", Force: true})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromString("25%"), *applied.Spec.MaxUnavailable)
	assert.Equal(t, "typed", applied.Spec.Selector.MatchLabels["app"])
	var _ *policyv1alpha1.PodUnavailableBudget = applied

	// apply configuration of a CloneSet: change only the partition
	ac := applyappsv1alpha1.CloneSet("typed", h.ns).
		WithSpec(applyappsv1alpha1.CloneSetSpec().
			WithUpdateStrategy(applyappsv1alpha1.CloneSetUpdateStrategy().WithPartition(intstr.FromString("50%"))))
	got, err := h.cs.AppsV1alpha1().CloneSets(h.ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "flotilla-e2e", Force: true})
	require.NoError(t, err)
	assert.Equal(t, intstr.FromString("50%"), *got.Spec.UpdateStrategy.Partition)
	assert.Equal(t, int32(3), *got.Spec.Replicas)
}
