package cluster

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func claimSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

// A claim of the default StorageClass is provisioned and bound, a pod using it runs, and
// deleting the claim deletes the volume (reclaim policy Delete), directory included.
func TestPersistentVolumeClaimLifecycle(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	pvcs := env.Kube.CoreV1().PersistentVolumeClaims(ns)

	_, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	var claim *corev1.PersistentVolumeClaim
	testenv.Eventually(t, podTimeout, func() (bool, error) {
		claim, err = pvcs.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && claim.Status.Phase == corev1.ClaimBound, err
	})
	assert.Equal(t, "standard", ptr.Deref(claim.Spec.StorageClassName, ""), "default StorageClass applied")
	pv, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, pv.Spec.PersistentVolumeReclaimPolicy)
	require.NotNil(t, pv.Spec.HostPath)
	dir := pv.Spec.HostPath.Path
	assert.DirExists(t, dir, "volume directory (the cluster runs on this machine)")

	pod := newPod("user", "app")
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	createPod(t, env, ns, pod)
	waitPod(t, env, ns, "user", "Running and Ready with the claim", runningReady)

	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{}))
	require.NoError(t, pvcs.Delete(ctx, "data", metav1.DeleteOptions{}))
	testenv.Eventually(t, podTimeout, func() (bool, error) {
		_, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "volume directory %s removed, got %v", dir, err)
}

// StatefulSet pods with volumeClaimTemplates get their claims bound and run.
func TestStatefulSetVolumeClaimTemplates(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "db", Image: "registry.example/db:v1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec()}},
		},
	}
	_, err := env.Kube.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"db-0", "db-1"} {
		p := waitPod(t, env, ns, name, "Running and Ready", runningReady)
		claim, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.ClaimBound, claim.Status.Phase)
		assert.NotEmpty(t, p.Spec.NodeName)
	}
}
