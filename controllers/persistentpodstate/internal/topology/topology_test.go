package topology

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

const zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"

func spec(required []string, preferred ...appsv1alpha1.PreferredTopologyTerm) *appsv1alpha1.PersistentPodStateSpec {
	s := &appsv1alpha1.PersistentPodStateSpec{PreferredPersistentTopology: preferred}
	if required != nil {
		s.RequiredPersistentTopology = &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: required}
	}
	return s
}

func pref(weight int32, keys ...string) appsv1alpha1.PreferredTopologyTerm {
	return appsv1alpha1.PreferredTopologyTerm{Weight: weight, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys}}
}

func in(key, value string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
}

func TestConstraintsFor(t *testing.T) {
	recorded := appsv1alpha1.PodState{NodeName: "n1", NodeTopologyLabels: map[string]string{zone: "z1", host: "n1"}}
	for _, tc := range []struct {
		name  string
		spec  *appsv1alpha1.PersistentPodStateSpec
		state appsv1alpha1.PodState
		want  Constraints
	}{
		{name: "required zone, preferred host with its weight", spec: spec([]string{zone}, pref(60, host)), state: recorded,
			want: Constraints{NodeSelector: map[string]string{zone: "z1"},
				Preferred: []corev1.PreferredSchedulingTerm{{Weight: 60, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(host, "n1")}}}}}},
		{name: "two preferred terms keep their own weights and order", spec: spec(nil, pref(100, host), pref(10, zone)), state: recorded,
			want: Constraints{Preferred: []corev1.PreferredSchedulingTerm{
				{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(host, "n1")}}},
				{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "z1")}}}}}},
		{name: "one term with two keys: both values", spec: spec(nil, pref(50, zone, host)), state: recorded,
			want: Constraints{Preferred: []corev1.PreferredSchedulingTerm{{Weight: 50, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{in(zone, "z1"), in(host, "n1")}}}}}},
		{name: "a required key the record lacks is left out", spec: spec([]string{zone, "rack"}), state: recorded,
			want: Constraints{NodeSelector: map[string]string{zone: "z1"}}},
		{name: "nothing recorded for the required keys", spec: spec([]string{"rack"}), state: recorded, want: Constraints{}},
		{name: "a preferred term without recorded keys stays, empty (as OpenKruise)", spec: spec(nil, pref(5, "rack")), state: recorded,
			want: Constraints{Preferred: []corev1.PreferredSchedulingTerm{{Weight: 5}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ConstraintsFor(tc.spec, tc.state))
		})
	}
}

func TestApply(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}, Affinity: &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}}}}}
	Apply(pod, "web", Constraints{NodeSelector: map[string]string{zone: "z1"},
		Preferred: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(host, "n1")}}}}})
	assert.Equal(t, map[string]string{"disk": "ssd", zone: "z1"}, pod.Spec.NodeSelector)
	assert.Equal(t, "web", pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
	prefs := pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	assert.Len(t, prefs, 2, "the pod's own preference is kept, the recorded one appended")
	assert.Equal(t, int32(100), prefs[1].Weight)

	again := pod.DeepCopy()
	Apply(again, "web", Constraints{NodeSelector: map[string]string{zone: "z1"},
		Preferred: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(host, "n1")}}}}})
	assert.Equal(t, pod, again, "a second injection changes nothing")

	bare := &corev1.Pod{}
	Apply(bare, "web", Constraints{Preferred: []corev1.PreferredSchedulingTerm{{Weight: 7}}})
	assert.Nil(t, bare.Spec.NodeSelector)
	assert.Len(t, bare.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)
}

func TestTargets(t *testing.T) {
	pps := func(apiVersion, kind string) *appsv1alpha1.PersistentPodState {
		return &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
			Spec: appsv1alpha1.PersistentPodStateSpec{TargetReference: appsv1alpha1.PersistentPodStateTargetReference{APIVersion: apiVersion, Kind: kind, Name: "web"}}}
	}
	for _, tc := range []struct {
		apiVersion, kind string
		want             Target
		ok               bool
	}{
		{"apps/v1", "StatefulSet", Target{"ns", "apps", "web"}, true},
		{"apps.kruise.io/v1beta1", "StatefulSet", Target{"ns", "apps.kruise.io", "web"}, true},
		{"apps.kruise.io/v1alpha1", "StatefulSet", Target{"ns", "apps.kruise.io", "web"}, true},
		{"apps.kruise.io/v1alpha1", "CloneSet", Target{}, false},
		{"apps/v1", "Deployment", Target{}, false},
	} {
		got, ok := OfPersistentPodState(pps(tc.apiVersion, tc.kind))
		assert.Equal(t, tc.ok, ok, tc.apiVersion+" "+tc.kind)
		assert.Equal(t, tc.want, got, tc.apiVersion+" "+tc.kind)

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: tc.apiVersion, Kind: tc.kind, Name: "web", Controller: ptr.To(true)}}}}
		got, ok = OfPod(pod)
		assert.Equal(t, tc.ok, ok, "pod of "+tc.apiVersion+" "+tc.kind)
		assert.Equal(t, tc.want, got)
	}
	notController := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}}}}
	_, ok := OfPod(notController)
	assert.False(t, ok, "an owner that is not the controller")
	assert.Equal(t, []string{host, zone}, Keys(spec([]string{zone}, pref(1, host, zone))))
}
