package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func podSet() *appsv1beta1.StatefulSet {
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "set-uid"},
		Spec: appsv1beta1.StatefulSetSpec{
			ServiceName: "web-svc",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "app:v1"}},
					Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
		},
	}
}

func TestNewPodIdentity(t *testing.T) {
	set := podSet()
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-abc"}}
	pod := newPod(set, rev, &set.Spec.Template, 3, true)
	assert.Equal(t, "web-3", pod.Name)
	assert.Equal(t, "web-3", pod.Spec.Hostname)
	assert.Equal(t, "web-svc", pod.Spec.Subdomain)
	assert.Equal(t, map[string]string{
		"app": "web", pub.StatefulSetPodNameLabel: "web-3", pub.PodIndexLabel: "3",
		pub.ControllerRevisionHashLabelKey: "web-abc", pub.LifecycleStateKey: "Normal",
	}, pod.Labels)
	require.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, types.UID("set-uid"), pod.OwnerReferences[0].UID)
	assert.True(t, *pod.OwnerReferences[0].Controller)
	require.Len(t, pod.Spec.Volumes, 1, "the template volume of the same name is replaced by the claim")
	assert.Equal(t, "data-web-3", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}, pod.Spec.ReadinessGates,
		"KruisePodReady on every pod, hooks or not")

	set.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"x": "y"}},
		PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"a/b"}, MarkPodNotReady: true}}
	pod = newPod(set, rev, &set.Spec.Template, 0, false)
	assert.Equal(t, "PreparingNormal", pod.Labels[pub.LifecycleStateKey])
	assert.NotContains(t, pod.Labels, pub.PodIndexLabel)
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}, pod.Spec.ReadinessGates)
	assert.Equal(t, "app:v1", set.Spec.Template.Spec.Containers[0].Image, "template untouched")
	assert.NotContains(t, set.Spec.Template.Labels, pub.StatefulSetPodNameLabel, "template untouched")
}

func TestNewClaims(t *testing.T) {
	claims := newClaims(podSet(), 2)
	require.Len(t, claims, 1)
	assert.Equal(t, "data-web-2", claims[0].Name)
	assert.Equal(t, map[string]string{"app": "web"}, claims[0].Labels)
	assert.Empty(t, claims[0].OwnerReferences)
}

func TestClaimOwners(t *testing.T) {
	set := podSet()
	pod := testPod(1)
	setRef := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web", UID: "set-uid"}
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: pod.UID}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "cm"}
	retainAll, deleteAll := retention{}, retention{deleteWhenDeleted: true, deleteWhenScaled: true}
	for _, tc := range []struct {
		name      string
		current   []metav1.OwnerReference
		pod       *corev1.Pod
		condemned bool
		r         retention
		want      []metav1.OwnerReference
		changed   bool
	}{
		{name: "retain/retain: no references", pod: pod, r: retainAll},
		{name: "retain/retain removes ours, keeps others", current: []metav1.OwnerReference{setRef, other, podRef}, pod: pod, r: retainAll,
			want: []metav1.OwnerReference{other}, changed: true},
		{name: "whenDeleted=Delete: owned by the set", pod: pod, r: retention{deleteWhenDeleted: true}, want: []metav1.OwnerReference{setRef}, changed: true},
		{name: "whenScaled=Delete, in a slot: not owned by its pod", current: []metav1.OwnerReference{podRef}, pod: pod, r: retention{deleteWhenScaled: true}, changed: true},
		{name: "whenScaled=Delete, condemned: owned by its pod", pod: pod, condemned: true, r: retention{deleteWhenScaled: true},
			want: []metav1.OwnerReference{podRef}, changed: true},
		{name: "delete/delete, condemned: the pod instead of the set", current: []metav1.OwnerReference{setRef}, pod: pod, condemned: true, r: deleteAll,
			want: []metav1.OwnerReference{podRef}, changed: true},
		{name: "delete/delete, in a slot: already right", current: []metav1.OwnerReference{setRef}, pod: pod, r: deleteAll,
			want: []metav1.OwnerReference{setRef}},
		{name: "a stale pod reference is left to the garbage collector", current: []metav1.OwnerReference{{Kind: "Pod", Name: "web-1", UID: "old"}}, pod: pod, r: retainAll,
			want: []metav1.OwnerReference{{Kind: "Pod", Name: "web-1", UID: "old"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := claimOwners(tc.current, set, tc.pod, tc.condemned, tc.r)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.changed, changed)
		})
	}
}

func TestStaleClaim(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "web-1", UID: "old"}}}}
	assert.True(t, staleClaim(claim, "web-1", nil), "owned by a pod that is gone")
	assert.True(t, staleClaim(claim, "web-1", testPod(1)), "owned by an earlier pod of the ordinal")
	assert.False(t, staleClaim(claim, "web-1", testPod(1, func(p *corev1.Pod) { p.UID = "old" })))
	assert.False(t, staleClaim(&corev1.PersistentVolumeClaim{}, "web-1", nil))
}
