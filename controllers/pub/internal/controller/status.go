package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
)

// updateStatus computes the status (pubcontrol.CalculateStatus) over the
// stored one and writes it when it differs. The write carries the
// resourceVersion it was computed from: the guard takes from the same
// status with the same lock, so on a conflict the status is read again
// from the API server and recomputed — neither side loses the other's
// records. It returns when to look again (an expiry), 0 for never.
func (c *Controller) updateStatus(ctx context.Context, cached *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod, expected int32) (time.Duration, error) {
	cur := cached
	var recheck time.Duration
	var notDeleted []*corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r, err := pubcontrol.CalculateStatus(cur, pubcontrol.Observed{Pods: pods, Expected: expected, Now: c.now()})
		if err != nil {
			return err
		}
		recheck, notDeleted = r.Recheck, r.NotDeleted
		if pubcontrol.StatusEqual(cur.Status, r.Status) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Status = r.Status
		_, err = c.Client.PolicyV1alpha1().PodUnavailableBudgets(upd.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := c.Client.PolicyV1alpha1().PodUnavailableBudgets(cur.Namespace).Get(ctx, cur.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			cur = fresh
			return err
		}
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Updated status", "pub", klog.KObj(cur), "unavailableAllowed", r.Status.UnavailableAllowed,
				"currentAvailable", r.Status.CurrentAvailable, "desiredAvailable", r.Status.DesiredAvailable, "totalReplicas", r.Status.TotalReplicas)
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("update status of pub %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	for _, pod := range notDeleted {
		c.Recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PUB %s/%s to be deleted but it wasn't", cached.Namespace, cached.Name)
	}
	return recheck, nil
}
