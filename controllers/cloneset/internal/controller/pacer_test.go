package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestCountersOnly(t *testing.T) {
	base := appsv1alpha1.CloneSetStatus{
		ObservedGeneration: 2, Replicas: 5, ReadyReplicas: 3, UpdateRevision: "web-2", CurrentRevision: "web-1",
		Conditions: []appsv1alpha1.CloneSetCondition{{Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: "True",
			Reason: appsv1alpha1.CloneSetProgressUpdated, LastUpdateTime: metav1.NewTime(now)}},
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1alpha1.CloneSetStatus)
		want   bool
	}{
		{"ready and available counts", func(s *appsv1alpha1.CloneSetStatus) { s.ReadyReplicas, s.AvailableReplicas = 4, 4 }, true},
		{"replicas and updated counts", func(s *appsv1alpha1.CloneSetStatus) { s.Replicas, s.UpdatedReplicas, s.UpdatedReadyReplicas = 6, 1, 1 }, true},
		{"progress time moves with them", func(s *appsv1alpha1.CloneSetStatus) {
			s.ReadyReplicas = 4
			s.Conditions[0].LastUpdateTime = metav1.NewTime(now.Add(time.Second))
		}, true},
		{"observedGeneration", func(s *appsv1alpha1.CloneSetStatus) { s.ObservedGeneration = 3 }, false},
		{"currentRevision", func(s *appsv1alpha1.CloneSetStatus) { s.CurrentRevision = "web-2" }, false},
		{"condition reason", func(s *appsv1alpha1.CloneSetStatus) { s.Conditions[0].Reason = appsv1alpha1.CloneSetProgressAvailable }, false},
		{"a new condition", func(s *appsv1alpha1.CloneSetStatus) {
			s.Conditions = append(s.Conditions, appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionFailedScale, Status: "True"})
		}, false},
		{"expectedUpdatedReplicas (partition)", func(s *appsv1alpha1.CloneSetStatus) { s.ExpectedUpdatedReplicas = 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := *base.DeepCopy()
			tc.change(&next)
			assert.Equal(t, tc.want, countersOnly(base, next))
			assert.Equal(t, metav1.NewTime(now), base.Conditions[0].LastUpdateTime, "the current status is not modified")
		})
	}
}
