package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// The CloneSet's update strategy and status in kit/predownload's terms.
func TestPreDownloadInput(t *testing.T) {
	cur := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: currentRev}}
	upd := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: updateRev}}
	inPlace := func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	}
	cases := []struct {
		name string
		cs   *appsv1alpha1.CloneSet
		want predownload.Input
	}{
		{"defaults: ReCreate, maxUnavailable 20%", testCloneSet(10), predownload.Input{Replicas: 10, Recreate: true, MaxUnavailable: intstr.FromString("20%")}},
		{"in place, percent partition rounds up, maxUnavailable kept as given", testCloneSet(10, inPlace, func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition = ios("25%")
			cs.Spec.UpdateStrategy.MaxUnavailable = ios("80%")
		}), predownload.Input{Replicas: 10, Partition: 3, MaxUnavailable: intstr.FromString("80%")}},
		{"status and annotations", testCloneSet(5, inPlace, func(cs *appsv1alpha1.CloneSet) {
			cs.Annotations = map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: "2"}
			cs.Status.UpdateRevision = currentRev
			cs.Status.UpdatedReadyReplicas = 4
		}), predownload.Input{Replicas: 5, MaxUnavailable: intstr.FromString("20%"),
			Annotations: map[string]string{pub.ImagePreDownloadMinUpdatedReadyPods: "2"}, StatusUpdateRevision: currentRev, UpdatedReadyReplicas: 4}},
		{"InPlaceOnly", testCloneSet(5, func(cs *appsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		}), predownload.Input{Replicas: 5, MaxUnavailable: intstr.FromString("20%")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Current, tc.want.Update = cur, upd
			assert.Equal(t, tc.want, preDownloadInput(&syncState{cs: tc.cs, Revisions: workload.Revisions{Current: cur, Update: upd}}))
		})
	}
}
