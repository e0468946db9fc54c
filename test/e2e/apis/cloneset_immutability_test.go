package apis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// spec.selector of a CloneSet is immutable (transition rule self == oldSelf,
// as OpenKruise's webhook allows no selector change), while the fields
// OpenKruise lets users change stay mutable, and the selector/template
// rule is checked again on every update.
func TestCloneSetSelectorIsImmutable(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sets := h.cs.AppsV1alpha1().CloneSets(h.ns)

	created, err := sets.Create(ctx, &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "immutable"},
		Spec: appsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "immutable"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "immutable", "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.25"}}},
			},
		},
	}, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)

	// requireRejected asserts an update is refused with a 422 naming field.
	requireRejected := func(t *testing.T, err error, field, message string) {
		t.Helper()
		require.Error(t, err)
		require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
		assert.Contains(t, err.Error(), message)
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		var fields []string
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				fields = append(fields, c.Field)
			}
		}
		assert.Contains(t, fields, field, "the error's causes must name the field")
	}

	t.Run("a different selector that still matches the template", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "immutable", "tier": "web"}}
		_, err := sets.Update(ctx, cs, metav1.UpdateOptions{})
		requireRejected(t, err, "spec.selector", "spec.selector is immutable")
	})

	t.Run("the same selector written as matchExpressions", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"immutable"}},
		}}
		_, err := sets.Update(ctx, cs, metav1.UpdateOptions{})
		requireRejected(t, err, "spec.selector", "spec.selector is immutable")
	})

	t.Run("a selector and template moved together", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		cs.Spec.Template.Labels = map[string]string{"app": "other"}
		_, err := sets.Update(ctx, cs, metav1.UpdateOptions{})
		requireRejected(t, err, "spec.selector", "spec.selector is immutable")
	})

	t.Run("a template that drops a selector label", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Template.Labels = map[string]string{"tier": "web"}
		_, err := sets.Update(ctx, cs, metav1.UpdateOptions{})
		requireRejected(t, err, "spec.template.metadata.labels", "spec.template.metadata.labels must contain every spec.selector.matchLabels entry")
	})

	t.Run("every field OpenKruise lets users change", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Replicas = ptr.To[int32](3)
		cs.Spec.Template.Labels["tier"] = "api"
		cs.Spec.Template.Annotations = map[string]string{"note": "v2"}
		cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
		cs.Spec.ScaleStrategy.PodsToDelete = []string{"immutable-abcde"}
		cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
		cs.Spec.UpdateStrategy.Paused = true
		cs.Spec.MinReadySeconds = 5
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
		cs.Spec.RevisionHistoryLimit = ptr.To[int32](3)
		cs.Spec.Lifecycle = &appspub.Lifecycle{PreDelete: &appspub.LifecycleHook{
			FinalizersHandler: []string{"example.io/unready-blocker"}, MarkPodNotReady: true,
		}}
		updated, err := sets.Update(ctx, cs, metav1.UpdateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		assert.Equal(t, created.Spec.Selector, updated.Spec.Selector)
		assert.Equal(t, "nginx:1.26", updated.Spec.Template.Spec.Containers[0].Image)
		created = updated
	})

	t.Run("an update that leaves the selector alone after other changes", func(t *testing.T) {
		cs := created.DeepCopy()
		cs.Spec.Replicas = ptr.To[int32](1)
		_, err := sets.Update(ctx, cs, metav1.UpdateOptions{})
		require.NoError(t, err)
	})
}
