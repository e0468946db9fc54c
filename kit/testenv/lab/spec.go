package lab

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Selector selects the pods labelled app=<name>, as the tests' workloads do.
func Selector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
}

// Template is the pod template of the tests' workloads: label app=<name>,
// one container "main" running image. It tolerates no test-owned node:
// other packages create and delete theirs while the tests run, and the pod
// garbage collector deletes pods bound to a deleted node.
func Template(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// SetDataClaim makes *claims one ReadWriteOnce volumeClaimTemplate "data" of
// 1Mi and mounts it at /data in container c.
func SetDataClaim(claims *[]corev1.PersistentVolumeClaim, c *corev1.Container) {
	*claims = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
}
