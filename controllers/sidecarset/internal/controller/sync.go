package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

var everything = labels.Everything()

// sync reconciles one SidecarSet: revisions, then (unless paused or
// NotUpdate) hot-upgrade flips or the next in-place upgrades, then status.
func (c *Controller) sync(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	set, err := c.sets.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its revisions go with it (controllerRef, garbage collector)
	}
	if err != nil {
		return fmt.Errorf("get sidecarset %s: %w", name, err)
	}
	pods, err := c.matchedPods(set)
	if err != nil {
		return err
	}
	// Never decide on objects the cache shows older than our own last write.
	if wait := expectations.WaitAll(c.rvExp, slices.Values(pods), set); wait > 0 {
		logger.V(4).Info("Waiting for the cache to show our pod writes", "after", wait)
		c.queue.AddAfter(name, wait)
		return nil
	}
	latest, collision, revErr := c.syncRevisions(ctx, set, pods)
	latestName := set.Status.LatestRevision
	if latest != nil {
		latestName = latest.Name
	}
	// Status last, as every controller: it is computed from the same cache
	// the plan reads, and written whatever the pod writes did.
	status := calculateStatus(set, pods, latestName, collision)
	if revErr != nil {
		return errors.Join(revErr, c.updateStatus(ctx, set, status))
	}
	return errors.Join(c.upgradePods(ctx, set, pods, latestName), c.updateStatus(ctx, set, status))
}

// matchedPods are the pods the SidecarSet injected that still carry all its
// containers and still match its namespace, namespaceSelector and selector.
func (c *Controller) matchedPods(set *appsv1alpha1.SidecarSet) ([]*corev1.Pod, error) {
	objs, err := c.pods.ByIndex(podsBySidecarSet, set.Name)
	if err != nil {
		return nil, fmt.Errorf("pods of sidecarset %s: %w", set.Name, err)
	}
	var out []*corev1.Pod
	nsLabels := map[string]map[string]string{}
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if !sidecarcontrol.HasAllSidecars(pod, set) {
			continue
		}
		nl, ok := nsLabels[pod.Namespace]
		if !ok && set.Spec.NamespaceSelector != nil {
			if ns, err := c.namespaces.Get(pod.Namespace); err == nil {
				nl = ns.Labels
			}
			nsLabels[pod.Namespace] = nl
		}
		match, err := sidecarcontrol.Matches(pod, nl, set)
		if err != nil {
			return nil, err
		}
		if match {
			out = append(out, pod)
		}
	}
	return out, nil
}
