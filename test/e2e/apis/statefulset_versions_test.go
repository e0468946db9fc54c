package apis

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func stsTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sts"}},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: appspub.InPlaceUpdateReady}},
			Containers:     []corev1.Container{{Name: "main", Image: "nginx:1.25"}},
		},
	}
}

func specJSON(t *testing.T, v interface{}) map[string]interface{} {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]interface{}
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// The StatefulSet CRD serves v1alpha1 and v1beta1 (storage) with conversion
// strategy None and identical schemas, so an object written in one version
// reads back unchanged (apart from apiVersion) in the other, including the
// fields OpenKruise only documents for v1beta1.
func TestStatefulSetVersionsAreInterchangeable(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()

	t.Run("v1alpha1 written, v1beta1 read", func(t *testing.T) {
		in := &appsv1alpha1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "written-as-alpha", Namespace: h.ns},
			Spec: appsv1beta1.StatefulSetSpec{
				Replicas:            ptr.To[int32](3),
				Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sts"}},
				Template:            stsTemplate(),
				ServiceName:         "sts",
				PodManagementPolicy: "Parallel",
				UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
					Type: "RollingUpdate",
					RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
						Partition:       ptr.To[int32](1),
						MaxUnavailable:  ptr.To(intstr.FromString("50%")),
						PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
						MinReadySeconds: ptr.To[int32](10),
					},
				},
				ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("4-5")},
			},
		}
		created, err := h.cs.AppsV1alpha1().StatefulSets(h.ns).Create(ctx, in, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		got, err := h.cs.AppsV1beta1().StatefulSets(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, created.Spec), specJSON(t, got.Spec))
		assert.Equal(t, created.ResourceVersion, got.ResourceVersion)

		// an update through v1beta1 is visible through v1alpha1
		got.Spec.Lifecycle = &appspub.Lifecycle{PreDelete: &appspub.LifecycleHook{LabelsHandler: map[string]string{"hook": "true"}}}
		upd, err := h.cs.AppsV1beta1().StatefulSets(h.ns).Update(ctx, got, metav1.UpdateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		back, err := h.cs.AppsV1alpha1().StatefulSets(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, upd.Spec), specJSON(t, back.Spec))
	})

	t.Run("v1beta1 written, v1alpha1 read", func(t *testing.T) {
		in := &appsv1beta1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "written-as-beta", Namespace: h.ns},
			Spec: appsv1beta1.StatefulSetSpec{
				Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sts"}},
				Template:        stsTemplate(),
				ServiceName:     "sts",
				ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(0)},
				Lifecycle:       &appspub.Lifecycle{InPlaceUpdate: &appspub.LifecycleHook{FinalizersHandler: []string{"example.com/hook"}, MarkPodNotReady: true}},
				ScaleStrategy:   &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))},
				PersistentVolumeClaimRetentionPolicy: &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType,
				},
				Ordinals:                  &appsv1beta1.StatefulSetOrdinals{Start: 2},
				VolumeClaimUpdateStrategy: appsv1beta1.VolumeClaimUpdateStrategy{Type: appsv1beta1.OnDeleteVolumeClaimUpdateStrategyType},
			},
		}
		created, err := h.cs.AppsV1beta1().StatefulSets(h.ns).Create(ctx, in, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		// defaults: the Go client always sends updateStrategy {}, so only its
		// type is defaulted; the whenScaled default fills the retention policy.
		assert.Equal(t, "RollingUpdate", string(created.Spec.UpdateStrategy.Type))
		assert.Equal(t, appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, created.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
		got, err := h.cs.AppsV1alpha1().StatefulSets(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, created.Spec), specJSON(t, got.Spec))

		// status written through one version is read through the other
		created.Status = appsv1beta1.StatefulSetStatus{
			ObservedGeneration: created.Generation, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1,
			UpdatedReadyReplicas: 1, LabelSelector: "app=sts",
			VolumeClaims: []appsv1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1, CompatibleReadyReplicas: 1}},
		}
		st, err := h.cs.AppsV1beta1().StatefulSets(h.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, err = h.cs.AppsV1alpha1().StatefulSets(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, st.Status), specJSON(t, got.Status))

		// scale subresource works in both versions
		sc, err := h.cs.AppsV1alpha1().StatefulSets(h.ns).GetScale(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(1), sc.Spec.Replicas)
		assert.Equal(t, "app=sts", sc.Status.Selector)
		sc.Spec.Replicas = 4
		_, err = h.cs.AppsV1beta1().StatefulSets(h.ns).UpdateScale(ctx, created.Name, sc, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, err = h.cs.AppsV1alpha1().StatefulSets(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(4), *got.Spec.Replicas)
	})
}
