package apis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func jobPod() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
	}}
}

// AdvancedCronJob, BroadcastJob and ImagePullJob are served at v1alpha1 and
// v1beta1 (storage, as in OpenKruise v1.9) with identical schemas and
// conversion strategy None: an object written through one version reads
// back unchanged through the other (spec and status), with the generated
// v1beta1 clients.
func TestJobKindsVersionsAreInterchangeable(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()

	t.Run("AdvancedCronJob v1alpha1 written, v1beta1 read and updated", func(t *testing.T) {
		in := &appsv1alpha1.AdvancedCronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "acj-alpha", Namespace: h.ns},
			Spec: appsv1alpha1.AdvancedCronJobSpec{
				Schedule:          "*/5 * * * *",
				TimeZone:          ptr.To("Asia/Shanghai"),
				ConcurrencyPolicy: appsv1alpha1.ForbidConcurrent,
				Template: appsv1alpha1.CronJobTemplate{
					JobTemplate: &batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod()}},
				},
			},
		}
		created, err := h.cs.AppsV1alpha1().AdvancedCronJobs(h.ns).Create(ctx, in, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		got, err := h.cs.AppsV1beta1().AdvancedCronJobs(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "apps.kruise.io/v1beta1", apiVersionOf(t, h, "advancedcronjobs", "v1beta1", created.Name))
		assert.Equal(t, specJSON(t, created.Spec), specJSON(t, got.Spec))

		got.Spec.Paused = ptr.To(true)
		upd, err := h.cs.AppsV1beta1().AdvancedCronJobs(h.ns).Update(ctx, got, metav1.UpdateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		upd.Status = appsv1beta1.AdvancedCronJobStatus{Type: appsv1beta1.JobTemplate, LastScheduleTime: ptr.To(metav1.Now().Rfc3339Copy())}
		st, err := h.cs.AppsV1beta1().AdvancedCronJobs(h.ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		require.NoError(t, err)
		back, err := h.cs.AppsV1alpha1().AdvancedCronJobs(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, st.Spec), specJSON(t, back.Spec))
		assert.Equal(t, specJSON(t, st.Status), specJSON(t, back.Status))
		assert.True(t, *back.Spec.Paused)
	})

	t.Run("BroadcastJob v1beta1 written, v1alpha1 read", func(t *testing.T) {
		in := &appsv1beta1.BroadcastJob{
			ObjectMeta: metav1.ObjectMeta{Name: "bcj-beta", Namespace: h.ns},
			Spec: appsv1beta1.BroadcastJobSpec{
				Parallelism:      ptr.To(intstr.FromString("50%")),
				Template:         jobPod(),
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Never, TTLSecondsAfterFinished: ptr.To[int32](60)},
				FailurePolicy:    appsv1beta1.FailurePolicy{Type: appsv1beta1.FailurePolicyTypeContinue, RestartLimit: 2},
				Paused:           true,
			},
		}
		created, err := h.cs.AppsV1beta1().BroadcastJobs(h.ns).Create(ctx, in, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		got, err := h.cs.AppsV1alpha1().BroadcastJobs(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, created.Spec), specJSON(t, got.Spec))

		// status written by a v1alpha1 client (the controller) reads back at v1beta1
		got.Status = appsv1alpha1.BroadcastJobStatus{Active: 1, Desired: 2, Succeeded: 1, Phase: appsv1alpha1.PhaseRunning,
			Conditions: []appsv1alpha1.JobCondition{{Type: appsv1alpha1.JobComplete, Status: corev1.ConditionFalse, Reason: "r"}}}
		st, err := h.cs.AppsV1alpha1().BroadcastJobs(h.ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		require.NoError(t, err)
		beta, err := h.cs.AppsV1beta1().BroadcastJobs(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, st.Status), specJSON(t, beta.Status))
	})

	t.Run("ImagePullJob both ways", func(t *testing.T) {
		in := &appsv1alpha1.ImagePullJob{
			ObjectMeta: metav1.ObjectMeta{Name: "ipj-alpha", Namespace: h.ns},
			Spec: appsv1alpha1.ImagePullJobSpec{Image: "nginx:1.25", ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				Selector:         &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{"node-a"}},
				SandboxConfig:    &appsv1alpha1.SandboxConfig{Labels: map[string]string{"a": "b"}},
				CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always},
			}},
		}
		created, err := h.cs.AppsV1alpha1().ImagePullJobs(h.ns).Create(ctx, in, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		got, err := h.cs.AppsV1beta1().ImagePullJobs(h.ns).Get(ctx, created.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, specJSON(t, created.Spec), specJSON(t, got.Spec))

		list, err := h.cs.AppsV1beta1().ImagePullJobs(h.ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, created.Name, list.Items[0].Name)
	})
}

// apiVersionOf reads the object through the dynamic client at version, to
// show the API server answers at that version (not only the typed client's
// decoding).
func apiVersionOf(t *testing.T, h *harness, resource, version, name string) string {
	t.Helper()
	u, err := h.dyn.Resource(gvrOf(resource, version)).Namespace(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return u.GetAPIVersion()
}

func gvrOf(resource, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apps.kruise.io", Version: version, Resource: resource}
}
