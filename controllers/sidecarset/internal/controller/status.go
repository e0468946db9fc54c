package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// calculateStatus counts the matched pods: updated (on the latest
// version), ready (consistent and ready, hot-upgrade twins idle) and both.
func calculateStatus(set *appsv1alpha1.SidecarSet, pods []*corev1.Pod, latestRevision string, collisionCount int32) appsv1alpha1.SidecarSetStatus {
	st := appsv1alpha1.SidecarSetStatus{
		ObservedGeneration: set.Generation,
		MatchedPods:        int32(len(pods)),
		LatestRevision:     latestRevision,
		CollisionCount:     ptr.To(collisionCount),
		Conditions:         set.Status.Conditions, // the webhook's (WebhookInScope), not computed here
	}
	for _, pod := range pods {
		updated := sidecarcontrol.IsUpdated(pod, set)
		if updated {
			st.UpdatedPods++
		}
		if available(pod, set) {
			st.ReadyPods++
			if updated {
				st.UpdatedReadyPods++
			}
		}
	}
	return st
}

// updateStatus writes status only when it differs from the cached one.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1alpha1.SidecarSet, status appsv1alpha1.SidecarSetStatus) error {
	statusOf := func(s *appsv1alpha1.SidecarSet) *appsv1alpha1.SidecarSetStatus { return &s.Status }
	if _, err := controller.WriteStatus(ctx, c.client.AppsV1alpha1().SidecarSets(), set, statusOf, status, c.rvExp); err != nil {
		return fmt.Errorf("update status of sidecarset %s: %w", set.Name, err)
	}
	return nil
}
