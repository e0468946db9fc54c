package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestHasReadinessGate(t *testing.T) {
	pod := simplePod([2]string{"a", ""})
	assert.False(t, HasReadinessGate(pod))
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	assert.False(t, HasReadinessGate(pod))
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: "InPlaceUpdateReady"})
	assert.True(t, HasReadinessGate(pod))
}

func TestConditions(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier}
	ipuTrue := corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier}
	ipuFalse := corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate", LastTransitionTime: earlier}
	now := metav1.NewTime(t0)

	tests := []struct {
		name    string
		start   bool // StartConditions, else CompletedConditions
		conds   []corev1.PodCondition
		want    []corev1.PodCondition
		changed bool
	}{
		{"start without a condition: appended", true,
			[]corev1.PodCondition{ready},
			[]corev1.PodCondition{ready, {Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate", LastTransitionTime: now}},
			true},
		{"start replaces True", true,
			[]corev1.PodCondition{ipuTrue, ready},
			[]corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate", LastTransitionTime: now}, ready},
			true},
		{"start when already started: unchanged", true,
			[]corev1.PodCondition{ready, ipuFalse},
			[]corev1.PodCondition{ready, ipuFalse},
			false},
		{"start over a False with another reason keeps the transition time", true,
			[]corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "Other", LastTransitionTime: earlier}},
			[]corev1.PodCondition{ipuFalse},
			true},
		{"completed flips False to True", false,
			[]corev1.PodCondition{ready, ipuFalse},
			[]corev1.PodCondition{ready, {Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			true},
		{"completed when already True: unchanged", false,
			[]corev1.PodCondition{ipuTrue},
			[]corev1.PodCondition{ipuTrue},
			false},
		{"completed without a condition: appended", false,
			nil,
			[]corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := simplePod([2]string{"a", ""})
			pod.Status.Conditions = tt.conds
			before := pod.DeepCopy()
			f := CompletedConditions
			if tt.start {
				f = StartConditions
			}
			got, changed := f(pod, t0)
			assert.Equal(t, tt.changed, changed)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, before, pod, "pod modified")
		})
	}
}

func TestCondition(t *testing.T) {
	pod := simplePod([2]string{"a", ""})
	assert.Nil(t, Condition(pod))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}, {Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}}
	assert.Equal(t, corev1.ConditionFalse, Condition(pod).Status)
}
