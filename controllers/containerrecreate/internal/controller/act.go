package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
)

var getOptions = metav1.GetOptions{}

const unreadyFinalizer = appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey

func hasFinalizer(crr *appsv1alpha1.ContainerRecreateRequest) bool {
	return slices.Contains(crr.Finalizers, unreadyFinalizer)
}

// complete ends the request as OpenKruise's manager does: phase Completed, completionTime, the message; the
// per-container states the agent wrote stay.
func (c *Controller) complete(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, msg string) error {
	klog.FromContext(ctx).Info("Completing ContainerRecreateRequest", "crr", klog.KObj(crr), "message", msg)
	out := crr.DeepCopy()
	now := metav1.NewTime(c.Clock.Now())
	out.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	out.Status.CompletionTime = &now
	out.Status.Message = msg
	if _, err := c.Client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("complete ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	c.Recorder.Eventf(crr, corev1.EventTypeNormal, "Completed", "ContainerRecreateRequest completed: %s", msg)
	return nil
}

// update writes the object (labels, finalizers, spec); the resourceVersion it carries makes a stale copy fail.
func (c *Controller) update(ctx context.Context, out *appsv1alpha1.ContainerRecreateRequest, what string) error {
	if _, err := c.Client.AppsV1alpha1().ContainerRecreateRequests(out.Namespace).Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s ContainerRecreateRequest %s/%s: %w", what, out.Namespace, out.Name, err)
	}
	return nil
}

// patchMeta merge-patches the request's labels or annotations (nil value: removal).
func (c *Controller) patchMeta(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, field string, kv map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{field: kv}})
	if err != nil {
		return fmt.Errorf("patch ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	_, err = c.Client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch %s of ContainerRecreateRequest %s/%s: %w", field, crr.Namespace, crr.Name, err)
	}
	return nil
}

func (c *Controller) dropActive(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) error {
	return c.patchMeta(ctx, crr, "labels", map[string]any{appsv1alpha1.ContainerRecreateRequestActiveKey: nil})
}

func (c *Controller) delete(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) error {
	klog.FromContext(ctx).Info("Deleting ContainerRecreateRequest for ttlSecondsAfterFinished", "crr", klog.KObj(crr))
	uid := crr.UID
	err := c.Client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Delete(ctx, crr.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ContainerRecreateRequest %s/%s: %w", crr.Namespace, crr.Name, err)
	}
	return nil
}

// syncStatuses writes the pod's statuses of the requested containers into the annotation the agent reads.
func (c *Controller) syncStatuses(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) error {
	v := syncedStatuses(crr, pod)
	if crr.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey] == v {
		return nil
	}
	return c.patchMeta(ctx, crr, "annotations", map[string]any{appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: v})
}

// acquireUnready makes the pod NotReady before the agent may stop anything: the finalizer first (so the key is
// always released, even if the request is deleted), then the pod's KruisePodReady condition, then the annotation
// the agent waits for, with the time its grace period starts. A pod without the KruisePodReady readiness gate
// cannot be made NotReady this way: the annotation is written anyway (OpenKruise's behaviour) and an event says so.
func (c *Controller) acquireUnready(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) error {
	if podreadiness.HasReadinessGate(pod) {
		if !hasFinalizer(crr) {
			out := crr.DeepCopy()
			out.Finalizers = append(out.Finalizers, unreadyFinalizer)
			return c.update(ctx, out, "add finalizer to")
		}
		if _, err := c.readiness.AddNotReadyKey(ctx, pod, readinessKey(crr)); err != nil {
			return fmt.Errorf("make pod %s/%s not ready: %w", pod.Namespace, pod.Name, err)
		}
	} else {
		c.Recorder.Eventf(crr, corev1.EventTypeWarning, "NoReadinessGate",
			"pod %s has no readinessGate %s: it stays Ready during unreadyGracePeriodSeconds", pod.Name, "KruisePodReady")
	}
	return c.patchMeta(ctx, crr, "annotations", map[string]any{
		appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: c.Clock.Now().UTC().Format(time.RFC3339),
	})
}

// releaseUnready gives the pod's readiness back (when the pod is still the request's) and drops the finalizer.
func (c *Controller) releaseUnready(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) error {
	if pod != nil && pod.DeletionTimestamp == nil && string(pod.UID) == crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] &&
		podreadiness.HasReadinessGate(pod) {
		if _, err := c.readiness.RemoveNotReadyKey(ctx, pod, readinessKey(crr)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release pod %s/%s readiness: %w", pod.Namespace, pod.Name, err)
		}
	}
	out := crr.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == unreadyFinalizer })
	return c.update(ctx, out, "remove finalizer from")
}
