package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync moves one request along: clean-up once finished, acceptance against its pod, deadlines, then, while the
// agent recreates, the pod's statuses and the unready grace period.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	crr, found, err := controller.Lookup("ContainerRecreateRequest", key, c.crrs.ContainerRecreateRequests(key.Namespace).Get)
	if err != nil || !found {
		return err
	}
	pod, err := c.pod(crr)
	if err != nil {
		return err
	}
	if finished(crr) {
		return c.cleanUp(ctx, crr, pod)
	}
	if !stamped(crr) {
		return c.accept(ctx, crr, pod)
	}
	msg, next := expiry(crr, pod, c.Clock.Now())
	if msg == msgPodGone {
		// The cache may trail the API server (the pod accepted was read live): gone is confirmed there.
		if pod, err = c.livePod(ctx, crr); err != nil {
			return err
		}
		msg, next = expiry(crr, pod, c.Clock.Now())
	}
	if msg != "" {
		return c.complete(ctx, crr, msg)
	}
	if next > 0 {
		c.Queue.AddAfter(key, next)
	}
	if crr.Status.Phase != appsv1alpha1.ContainerRecreateRequestRecreating {
		return nil
	}
	if err := c.syncStatuses(ctx, crr, pod); err != nil {
		return err
	}
	if wantsUnready(crr) {
		return c.acquireUnready(ctx, crr, pod)
	}
	return nil
}

// cleanUp releases the pod's readiness, drops the active label (agents stop watching) and deletes the request
// once its TTL has passed.
func (c *Controller) cleanUp(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) error {
	if hasFinalizer(crr) {
		return c.releaseUnready(ctx, crr, pod)
	}
	if crr.DeletionTimestamp != nil {
		return nil
	}
	if _, ok := crr.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]; ok {
		return c.dropActive(ctx, crr)
	}
	left, ok := ttlLeft(crr, c.Clock.Now())
	if !ok {
		return nil
	}
	if left > 0 {
		c.Queue.AddAfter(types.NamespacedName{Namespace: crr.Namespace, Name: crr.Name}, left)
		return nil
	}
	return c.delete(ctx, crr)
}

// accept stamps a new request, or completes it with the reason it cannot be carried out. A refusal is
// confirmed on the pod as the API server has it: the cache may trail a request that follows its pod's creation,
// binding or start closely (a pod not cached yet, or cached before its containers had IDs).
func (c *Controller) accept(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) error {
	out, msg := stamp(crr, pod)
	if msg != "" {
		live, err := c.livePod(ctx, crr)
		if err != nil {
			return err
		}
		out, msg = stamp(crr, live)
	}
	if msg != "" {
		return c.complete(ctx, crr, msg)
	}
	return c.update(ctx, out, "stamp")
}

// livePod reads the request's pod from the API server, nil when it does not exist.
func (c *Controller) livePod(ctx context.Context, crr *appsv1alpha1.ContainerRecreateRequest) (*corev1.Pod, error) {
	pod, err := c.Kube.CoreV1().Pods(crr.Namespace).Get(ctx, crr.Spec.PodName, getOptions)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	return pod, nil
}

// pod returns the request's pod from the cache, nil when it does not exist.
func (c *Controller) pod(crr *appsv1alpha1.ContainerRecreateRequest) (*corev1.Pod, error) {
	pod, err := c.pods.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	return pod, nil
}
