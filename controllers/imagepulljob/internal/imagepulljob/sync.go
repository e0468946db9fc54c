package imagepulljob

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// sync moves one job along: clean-up once deleted or finished (pull secrets released, TTL), else gather its
// nodes → status (pure) → the next nodes' NodeImages written (bounded by parallelism) → status written if changed.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	job, found, err := controller.Lookup("ImagePullJob", key, c.jobs.ImagePullJobs(key.Namespace).Get)
	if err != nil || !found {
		return err
	}
	if ok, wait := c.written.Satisfied(job); !ok {
		c.Queue.AddAfter(key, wait)
		return nil
	}
	if job.DeletionTimestamp != nil || job.Status.CompletionTime != nil {
		return c.finish(ctx, job)
	}
	name, tag, err := imageNameTag(job.Spec.Image)
	if err != nil {
		c.Recorder.Event(job, corev1.EventTypeWarning, "InvalidImage", err.Error())
		return controller.Permanent(err)
	}
	if len(job.Spec.PullSecrets) > 0 && !hasFinalizer(job) {
		// The finalizer guarantees the secret copies are released; the update event brings the job back.
		return c.addFinalizer(ctx, job)
	}
	targets, err := c.targets(ctx, job)
	if err != nil {
		return err
	}
	if wait := expectations.WaitAll(c.niWritten, slices.Values(targets)); wait > 0 {
		c.Queue.AddAfter(key, wait)
		return nil
	}
	secrets, err := c.claimSecrets(ctx, job)
	if err != nil {
		return err
	}
	now := metav1.NewTime(c.Clock.Now())
	st, notSynced := calculateStatus(job, targets, name, tag, secrets, now)
	next, more := nextNodes(notSynced, int(st.Active), parallelism(&job.Spec, len(targets)), maxNodeImageWritesPerSync)
	if err := c.writeNodeImages(ctx, job, next, name, tag, secrets, now); err != nil {
		return err
	}
	if more {
		defer c.Queue.Enqueue(key)
	}
	if err := c.updateStatus(ctx, job, st); err != nil {
		return err
	}
	if d := deadlineLeft(job, &st, now.Time); d > 0 {
		c.Queue.AddAfter(key, d)
	}
	return nil
}

// nextNodes picks the nodes to write next: as many as parallelism leaves beside the active ones, at most max per
// sync (more reports that the limit, not parallelism, held some back).
func nextNodes(notSynced []string, active, parallelism, max int) (next []string, more bool) {
	n := min(parallelism-active, len(notSynced))
	if n <= 0 {
		return nil, false
	}
	if n > max {
		return notSynced[:max], true
	}
	return notSynced[:n], false
}

// finish releases the job's pull-secret copies and its finalizer, then deletes a finished job once
// ttlSecondsAfterFinished has passed.
func (c *Controller) finish(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	if hasFinalizer(job) {
		if err := c.releaseSecrets(ctx, job); err != nil {
			return err
		}
		return c.removeFinalizer(ctx, job)
	}
	if job.DeletionTimestamp != nil || job.Spec.CompletionPolicy.TTLSecondsAfterFinished == nil {
		return nil
	}
	left := job.Status.CompletionTime.Add(time.Duration(*job.Spec.CompletionPolicy.TTLSecondsAfterFinished) * time.Second).Sub(c.Clock.Now())
	if left > 0 {
		c.Queue.AddAfter(types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, left)
		return nil
	}
	return c.delete(ctx, job)
}

// targets returns the NodeImages of the nodes job pulls on, read from the cache. A job that would complete for
// having none (completionPolicy Always) confirms that on the API server first: the cache may trail the nodes,
// NodeImages or pods created just before the job, and a completed job is never reopened.
func (c *Controller) targets(ctx context.Context, job *appsv1beta1.ImagePullJob) ([]*appsv1beta1.NodeImage, error) {
	cached := func(ns string, sel labels.Selector) ([]*corev1.Pod, error) { return c.pods.Pods(ns).List(sel) }
	out, err := gather(job, func() ([]*appsv1beta1.NodeImage, error) { return c.nodeImages.List(labels.Everything()) }, cached)
	if err != nil || len(out) > 0 || job.Spec.CompletionPolicy.Type == appsv1beta1.Never {
		return out, err
	}
	live := func(ns string, sel labels.Selector) ([]*corev1.Pod, error) {
		l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, err
		}
		return ptrs(l.Items), nil
	}
	return gather(job, func() ([]*appsv1beta1.NodeImage, error) {
		l, err := c.Client.AppsV1beta1().NodeImages().List(ctx, c.opts.ListOptions())
		if err != nil {
			return nil, err
		}
		return ptrs(l.Items), nil
	}, live)
}

// gather returns the NodeImages of the nodes job pulls on (the nodes its selector names, or those of its
// podSelector's scheduled pods), from the NodeImages and pods the two functions list.
func gather(job *appsv1beta1.ImagePullJob, nodeImages func() ([]*appsv1beta1.NodeImage, error),
	pods func(namespace string, sel labels.Selector) ([]*corev1.Pod, error)) ([]*appsv1beta1.NodeImage, error) {
	all, err := nodeImages()
	if err != nil {
		return nil, fmt.Errorf("list NodeImages: %w", err)
	}
	byName := make(map[string]*appsv1beta1.NodeImage, len(all))
	for _, ni := range all {
		byName[ni.Name] = ni
	}
	var selected []*corev1.Pod
	if job.Spec.PodSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
		if err != nil {
			return nil, controller.Permanent(fmt.Errorf("spec.podSelector: %w", err))
		}
		if selected, err = pods(job.Namespace, sel); err != nil {
			return nil, fmt.Errorf("list pods of ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	out, err := chooseNodeImages(&job.Spec, byName, selected)
	if err != nil {
		return nil, controller.Permanent(err)
	}
	return out, nil
}

// ptrs returns pointers to the items of a list.
func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
