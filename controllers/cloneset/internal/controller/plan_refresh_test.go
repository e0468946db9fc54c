package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"Normal, nothing in flight", testPod("p"), true},
		{"PreparingNormal", testPod("p", inState(pub.LifecycleStatePreparingNormal)), false},
		{"Updating", testPod("p", inState(pub.LifecycleStateUpdating)), false},
		{"in-place state", testPod("p", withAnnotation(pub.InPlaceUpdateStateKey, `{"revision":"r"}`)), false},
		{"grace period", testPod("p", withAnnotation(pub.InPlaceUpdateGraceKey, `{"revision":"r"}`)), false},
		{"a lifecycle key holds KruisePodReady False", testPod("p", func(p *corev1.Pod) {
			setCondition(p, pub.KruisePodReadyConditionType, corev1.ConditionFalse, now)
		}), false},
		{"KruisePodReady True", testPod("p", func(p *corev1.Pod) {
			setCondition(p, pub.KruisePodReadyConditionType, corev1.ConditionTrue, now)
		}), true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, settled(tc.pod)) })
	}
}
