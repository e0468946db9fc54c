package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func vct(name string, labels map[string]string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"note": name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func podTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:       map[string]string{"app": "web", "track": "stable"},
			Annotations:  map[string]string{"team": "a"},
			GenerateName: "ignored-",
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

func TestNewPod(t *testing.T) {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: updateRev}}
	trueVal := true
	wantRef := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web",
		Controller: &trueVal, BlockOwnerDeletion: &trueVal}

	for _, tc := range []struct {
		name      string
		lifecycle *pub.Lifecycle
		shortHash bool
		tmpl      func(*corev1.PodTemplateSpec)
		wantHash  string
		wantGates []corev1.PodConditionType
	}{
		{
			name:      "full revision name, no hooks",
			wantHash:  updateRev,
			wantGates: []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
		{
			name:      "short hash",
			shortHash: true,
			wantHash:  "6c8d9f7b5",
			wantGates: []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
		{
			name:      "preDelete hook without markPodNotReady: KruisePodReady all the same",
			lifecycle: &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}}},
			wantHash:  updateRev,
			wantGates: []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
		{
			name:      "preDelete hook marks pods NotReady: KruisePodReady gate",
			lifecycle: &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"drain": "true"}, MarkPodNotReady: true}},
			wantHash:  updateRev,
			wantGates: []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
		{
			name:      "inPlaceUpdate hook marks pods NotReady: KruisePodReady gate",
			lifecycle: &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"drain": "true"}, MarkPodNotReady: true}},
			wantHash:  updateRev,
			wantGates: []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
		{
			name: "gate already in the template is not duplicated",
			tmpl: func(t *corev1.PodTemplateSpec) {
				t.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}, {ConditionType: pub.InPlaceUpdateReady}}
			},
			wantHash:  updateRev,
			wantGates: []corev1.PodConditionType{"example.com/ready", pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(3, func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.Lifecycle = tc.lifecycle
				cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{vct("data", nil), vct("logs", nil)}
			})
			tmpl := podTemplate()
			if tc.tmpl != nil {
				tc.tmpl(tmpl)
			}
			before := tmpl.DeepCopy()

			pod := newPod(cs, rev, tmpl, "abcde", tc.shortHash)

			assert.Equal(t, before, tmpl, "template modified")
			assert.Equal(t, "web-abcde", pod.Name)
			assert.Equal(t, "ns", pod.Namespace)
			assert.Empty(t, pod.GenerateName)
			assert.Equal(t, map[string]string{
				"app":                              "web",
				"track":                            "stable",
				pub.CloneSetInstanceID:             "abcde",
				pub.ControllerRevisionHashLabelKey: tc.wantHash,
				pub.PodTemplateHashLabelKey:        "6c8d9f7b5",
				pub.LifecycleStateKey:              string(pub.LifecycleStatePreparingNormal),
			}, pod.Labels)
			assert.Equal(t, map[string]string{"team": "a"}, pod.Annotations)
			assert.Equal(t, []metav1.OwnerReference{wantRef}, pod.OwnerReferences)
			var gates []corev1.PodConditionType
			for _, g := range pod.Spec.ReadinessGates {
				gates = append(gates, g.ConditionType)
			}
			assert.Equal(t, tc.wantGates, gates)

			// The template's "data" volume is replaced in place by the instance's
			// PVC; "logs" is added; "config" is kept.
			assert.Equal(t, []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-abcde"}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs-web-abcde"}}},
			}, pod.Spec.Volumes)
			assert.Equal(t, tmpl.Spec.Containers, pod.Spec.Containers)
		})
	}
}

func TestNewPVCs(t *testing.T) {
	cs := testCloneSet(2, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Selector.MatchLabels["tier"] = "db"
		cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{
			vct("data", map[string]string{"backup": "daily", "tier": "overridden"}),
			vct("logs", nil),
			vct("cache", nil),
		}
	})
	before := cs.DeepCopy()
	trueVal := true
	ref := metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web",
		Controller: &trueVal, BlockOwnerDeletion: &trueVal}

	got := newPVCs(cs, "abcde", sets.New("logs-web-abcde", "data-web-zzzzz"))

	assert.Equal(t, before, cs, "CloneSet modified")
	require.Len(t, got, 2, "logs-web-abcde exists")
	assert.Equal(t, "data-web-abcde", got[0].Name)
	assert.Equal(t, "cache-web-abcde", got[1].Name)
	for _, pvc := range got {
		assert.Equal(t, "ns", pvc.Namespace)
		assert.Equal(t, []metav1.OwnerReference{ref}, pvc.OwnerReferences)
		assert.Equal(t, cs.Spec.VolumeClaimTemplates[0].Spec, pvc.Spec)
		assert.Equal(t, corev1.PersistentVolumeClaimStatus{}, pvc.Status, "template status not copied")
	}
	assert.Equal(t, map[string]string{"backup": "daily", "app": "web", "tier": "db", pub.CloneSetInstanceID: "abcde"}, got[0].Labels,
		"template labels, then the selector's matchLabels, then the instance id")
	assert.Equal(t, map[string]string{"app": "web", "tier": "db", pub.CloneSetInstanceID: "abcde"}, got[1].Labels)
	assert.Equal(t, map[string]string{"note": "data"}, got[0].Annotations)

	assert.Empty(t, newPVCs(testCloneSet(1), "abcde", nil), "no volumeClaimTemplates")
}

func TestAvailableIDs(t *testing.T) {
	podWithID := func(id string) *corev1.Pod { return testPod("web-"+id, withLabel(pub.CloneSetInstanceID, id)) }
	pvcWithID := func(name, id string, deleting bool) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pub.CloneSetInstanceID: id}}}
		if deleting {
			pvc.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return pvc
	}
	pods := []*corev1.Pod{podWithID("aaaaa"), podWithID("bbbbb")}
	pvcs := []*corev1.PersistentVolumeClaim{
		pvcWithID("data-web-bbbbb", "bbbbb", false), // its pod exists
		pvcWithID("data-web-ddddd", "ddddd", false), // orphan
		pvcWithID("logs-web-ddddd", "ddddd", false), // orphan, same instance
		pvcWithID("data-web-ccccc", "ccccc", false), // orphan
		pvcWithID("data-web-eeeee", "eeeee", true),  // orphan but being deleted
	}
	taken := sets.New("aaaaa", "bbbbb", "ccccc", "ddddd")

	fresh := func(t *testing.T, ids []string) {
		t.Helper()
		for _, id := range ids {
			assert.Len(t, id, 5)
			assert.False(t, taken.Has(id), "fresh id %q is in use", id)
		}
	}

	t.Run("reuse: orphan PVC ids first, sorted, each once", func(t *testing.T) {
		got := availableIDs(3, pods, pvcs, true)
		require.Len(t, got, 3)
		assert.Equal(t, []string{"ccccc", "ddddd"}, got[:2])
		fresh(t, got[2:])
	})
	t.Run("reuse: fewer needed than free", func(t *testing.T) {
		assert.Equal(t, []string{"ccccc"}, availableIDs(1, pods, pvcs, true))
	})
	t.Run("no reuse: only fresh ids, never an orphan PVC's", func(t *testing.T) {
		got := availableIDs(3, pods, pvcs, false)
		require.Len(t, got, 3)
		fresh(t, got)
	})
	t.Run("reuse: an orphan PVC id whose pod is still terminating waits", func(t *testing.T) {
		leaving := podWithID("ccccc")
		leaving.DeletionTimestamp = &metav1.Time{Time: now}
		got := availableIDs(3, append([]*corev1.Pod{leaving}, pods...), pvcs, true)
		// ccccc cannot be used until its pod is gone, and no fresh id replaces
		// it (the instance would lose its volumes): ddddd and one fresh id.
		require.Len(t, got, 2)
		assert.Equal(t, "ddddd", got[0])
		fresh(t, got[1:])
	})
	t.Run("none", func(t *testing.T) {
		assert.Empty(t, availableIDs(0, pods, pvcs, true))
	})
	t.Run("fresh ids are unique", func(t *testing.T) {
		got := availableIDs(500, nil, nil, true)
		assert.Len(t, sets.New(got...), 500)
		for _, id := range got {
			assert.Len(t, id, instanceIDLength)
		}
	})
	t.Run("fresh ids skip ids of existing pods and free PVCs", func(t *testing.T) {
		// Seed the generator so the ids it will produce are known, then make
		// them taken.
		defer utilrand.Seed(time.Now().UnixNano())
		utilrand.Seed(7)
		next := []string{utilrand.String(5), utilrand.String(5), utilrand.String(5), utilrand.String(5)}
		require.Len(t, sets.New(next...), 4)

		utilrand.Seed(7)
		got := availableIDs(1, []*corev1.Pod{podWithID(next[0])}, []*corev1.PersistentVolumeClaim{pvcWithID("data-web-x", next[1], false)}, false)
		assert.Equal(t, []string{next[2]}, got, "the first two generated ids are taken by a pod and a free PVC")

		utilrand.Seed(7)
		got = availableIDs(2, []*corev1.Pod{podWithID(next[0]), podWithID(next[2])}, []*corev1.PersistentVolumeClaim{pvcWithID("data-web-x", next[1], false)}, true)
		assert.Equal(t, []string{next[1], next[3]}, got, "the free PVC's id, then the first generated id nobody uses")
	})
}
