package broadcastjob

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one BroadcastJob: gather (cache only) → compute (pure) → act → status.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	job, err := c.jobs.BroadcastJobs(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.creates.Forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get BroadcastJob %s from cache: %w", key, err)
	}
	if job.DeletionTimestamp != nil {
		return nil // the garbage collector removes its pods
	}
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "broadcastjob", klog.KObj(job)))

	g, err := c.gather(ctx, key, job)
	if err != nil {
		return err
	}

	now := c.clock.Now()
	v := judge(judgeInput{job: job, tally: g.tally, desired: g.place.desired, inFlight: g.inFlight.Len(), invalid: validate(job), now: now})
	if v.deleteJob {
		return c.deleteJob(ctx, job)
	}
	plan := planPods(planInput{
		place: g.place, tally: g.tally, inFlight: g.inFlight, parallelism: g.parallelism, paused: v.paused,
		finished: v.finish != nil || finishedCondition(job.Status) != nil,
	})

	actErr := c.act(ctx, key, job, v, plan)

	status := computeStatus(job, g.tally, len(g.place.desired), v.finish, v.paused, now)
	if err := c.updateStatus(ctx, job, status); err != nil {
		return errors.Join(actErr, err)
	}
	if d := earliest(v.requeueAfter, g.expiresIn); d > 0 {
		c.queue.AddAfter(key, d)
	}
	return actErr
}

// observed is what gather read from the caches.
type observed struct {
	tally       podTally
	place       placement        // nodes in name order
	inFlight    sets.Set[string] // nodes with a create not yet in the cache
	expiresIn   time.Duration    // until the earliest in-flight create expires
	parallelism int
}

func (c *Controller) gather(ctx context.Context, key types.NamespacedName, job *appsv1alpha1.BroadcastJob) (observed, error) {
	objs, err := controller.ByOwnerUID(c.podIndex, job.UID)
	if err != nil {
		return observed{}, fmt.Errorf("list pods of BroadcastJob %s: %w", key, err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && metav1.IsControlledBy(pod, job) {
			pods = append(pods, pod)
		}
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return observed{}, fmt.Errorf("list nodes: %w", err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })

	var g observed
	logger := klog.FromContext(ctx)
	g.tally = tallyPods(pods, job.Spec.FailurePolicy.RestartLimit)
	g.place = place(logger, newEligibility(logger, &job.Spec.Template.Spec), nodes, g.tally.byNode)
	g.inFlight, g.expiresIn = c.creates.Pending(key, job.UID, func(name string) bool {
		_, err := c.pods.Pods(job.Namespace).Get(name)
		return err == nil
	})
	g.parallelism, _ = resolveParallelism(job.Spec.Parallelism, len(g.place.desired)) // an invalid value fails validate
	return g, nil
}

// earliest is the smallest positive duration, 0 if none.
func earliest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
