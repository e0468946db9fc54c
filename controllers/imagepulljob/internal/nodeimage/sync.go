package nodeimage

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// sync keeps one node's NodeImage: its existence (planLifecycle), then its spec (pruneSpec), then the manager's
// part of its status (calculateStatus); one write per sync, the next step on the event it causes.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	node, err := c.nodes.Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get Node %s: %w", key.Name, err)
	}
	if err != nil {
		node = nil
	}
	ni, err := c.nodeImages.Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get NodeImage %s: %w", key.Name, err)
	}
	if err != nil {
		ni = nil
	}
	if ni != nil {
		if ok, wait := c.written.Satisfied(ni); !ok {
			c.Queue.AddAfter(key, wait)
			return nil
		}
	}
	now := c.Clock.Now()
	switch lc, wait := planLifecycle(node, ni, c.opts.NodeImageCreationDelay, now); {
	case wait > 0:
		c.Queue.AddAfter(key, wait)
		return nil
	case lc == create:
		return c.create(ctx, node)
	case lc == remove:
		return c.delete(ctx, ni)
	case ni == nil || ni.DeletionTimestamp != nil || node == nil || node.DeletionTimestamp != nil:
		return nil
	}
	out, changed, wait, why := pruneSpec(ni, node.Labels, c.jobAlive, now)
	if wait > 0 {
		c.Queue.AddAfter(key, wait)
	}
	if changed {
		return c.update(ctx, out, why)
	}
	st, changed, wait, failed := calculateStatus(ni, metav1.NewTime(now))
	if wait > 0 {
		c.Queue.AddAfter(key, wait)
	}
	if !changed {
		return nil
	}
	if err := c.updateStatus(ctx, ni, st); err != nil {
		return err
	}
	c.reportFailures(ni, failed)
	return nil
}

// jobAlive: the job exists in the cache with that UID. A job is in the cache before any tag names it: the job
// reconciler writes tags only for jobs it read from the same cache.
//
// With --namespace the cache holds only that namespace's jobs: a tag of another namespace's job is kept (another
// instance owns it).
func (c *Controller) jobAlive(namespace, name string, uid types.UID) bool {
	if c.namespace != "" && namespace != c.namespace {
		return true
	}
	j, err := c.jobs.ImagePullJobs(namespace).Get(name)
	return err == nil && j.UID == uid
}

func (c *Controller) create(ctx context.Context, node *corev1.Node) error {
	ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: maps.Clone(node.Labels)}}
	out, err := c.Client.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create NodeImage %s: %w", node.Name, err)
	}
	c.written.Expect(out)
	klog.FromContext(ctx).Info("Created NodeImage", "nodeImage", node.Name)
	return nil
}

// delete removes the NodeImage of a node that is gone (UID precondition: never a newer one of the same name).
func (c *Controller) delete(ctx context.Context, ni *appsv1beta1.NodeImage) error {
	err := c.Client.AppsV1beta1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(ni.UID)}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete NodeImage %s: %w", ni.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted NodeImage: its node is gone", "nodeImage", ni.Name)
	return nil
}

func (c *Controller) update(ctx context.Context, out *appsv1beta1.NodeImage, why []string) error {
	written, err := c.Client.AppsV1beta1().NodeImages().Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update NodeImage %s (%s): %w", out.Name, strings.Join(why, "; "), err)
	}
	c.written.Expect(written)
	klog.FromContext(ctx).V(2).Info("Updated NodeImage", "nodeImage", out.Name, "why", why)
	return nil
}

// reportFailures records OpenKruise's PullImageFailed Warning on the NodeImage for each tag failed here.
func (c *Controller) reportFailures(ni *appsv1beta1.NodeImage, failed []failure) {
	for _, f := range failed {
		c.Recorder.Eventf(ni, corev1.EventTypeWarning, "PullImageFailed", "Failed to pull image %v on node %v for %v", f.image, ni.Name, f.message)
	}
}
