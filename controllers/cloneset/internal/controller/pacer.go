package controller

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// statusInterval spaces the status writes of one CloneSet whose only news is
// its pod counters (kit/controller.StatusPacer says why). Anything else —
// generation, revisions, conditions other than Progressing's update time —
// is written at once.
const statusInterval = time.Second

// countersOnly reports whether next differs from cur only in the pod
// counters (and the Progressing condition's lastUpdateTime, which moves with
// them).
func countersOnly(cur, next appsv1alpha1.CloneSetStatus) bool {
	strip := func(s appsv1alpha1.CloneSetStatus) appsv1alpha1.CloneSetStatus {
		s.Replicas, s.ReadyReplicas, s.AvailableReplicas = 0, 0, 0
		s.UpdatedReplicas, s.UpdatedReadyReplicas, s.UpdatedAvailableReplicas = 0, 0, 0
		s.Conditions = append([]appsv1alpha1.CloneSetCondition(nil), s.Conditions...)
		for i := range s.Conditions {
			if s.Conditions[i].Type == appsv1alpha1.CloneSetConditionTypeProgressing {
				s.Conditions[i].LastUpdateTime = metav1.Time{}
			}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(cur), strip(next))
}
