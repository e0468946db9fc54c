package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/predownload"
)

// The set's update strategy and status in kit/predownload's terms
// (OpenKruise's statefulset_predownload_image.go).
func TestPreDownloadInput(t *testing.T) {
	cur := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-v1"}}
	upd := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-v2"}}
	set := func(mut func(*appsv1beta1.StatefulSet)) *appsv1beta1.StatefulSet {
		s := &appsv1beta1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: "50%"}},
			Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To(int32(6)), UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
					PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
					Partition:       ptr.To(int32(2)),
					MaxUnavailable:  ptr.To(intstr.FromString("50%")),
				},
			}},
			Status: appsv1beta1.StatefulSetStatus{UpdateRevision: "web-v1", UpdatedReadyReplicas: 3},
		}
		if mut != nil {
			mut(s)
		}
		return s
	}
	base := predownload.Input{Current: cur, Update: upd, Replicas: 6, Partition: 2, MaxUnavailable: intstr.FromString("50%"),
		Annotations: map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: "50%"}, StatusUpdateRevision: "web-v1", UpdatedReadyReplicas: 3}
	recreate := base
	recreate.Recreate, recreate.Partition, recreate.MaxUnavailable = true, 0, intstr.FromInt32(1)
	cases := []struct {
		name string
		set  *appsv1beta1.StatefulSet
		want predownload.Input
	}{
		{"in place", set(nil), base},
		{"InPlaceOnly", set(func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceOnlyPodUpdateStrategyType
		}), base},
		{"ReCreate", set(func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreatePodUpdateStrategyType
		}),
			predownload.Input{Current: cur, Update: upd, Replicas: 6, Recreate: true, Partition: 2, MaxUnavailable: intstr.FromString("50%"),
				Annotations: base.Annotations, StatusUpdateRevision: "web-v1", UpdatedReadyReplicas: 3}},
		{"OnDelete", set(func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }), recreate},
		{"no rollingUpdate", set(func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate = nil }), recreate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, preDownloadInput(tc.set, cur, upd))
		})
	}
}
