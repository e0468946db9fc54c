package broadcastjob

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// sync reconciles one BroadcastJob: gather (cache only) → compute (pure) → act → status.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	job, ok, err := workload.Get(c.Base, key, c.jobs.BroadcastJobs(key.Namespace).Get, c.creates.Forget)
	if !ok || job.DeletionTimestamp != nil {
		return err // gone or going: the garbage collector removes its pods
	}
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "broadcastjob", klog.KObj(job)))

	g, err := c.gather(ctx, key, job)
	if err != nil {
		return err
	}

	now := c.Clock.Now()
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
		c.Queue.AddAfter(key, d)
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
	// Expectations first, pods second (as the DaemonSet controller): the informer stores a pod before its handler
	// runs, so a created pod that reached the cache between a read of the pods and a look at the expectations
	// would be in neither, and its node would get a second pod.
	var g observed
	g.inFlight, g.expiresIn = c.creates.Pending(key, job.UID, func(name string) bool {
		_, exists, err := c.Pods.GetByKey(job.Namespace + "/" + name)
		return err == nil && exists
	})
	pods, err := c.OwnedPods(job)
	if err != nil {
		return observed{}, fmt.Errorf("BroadcastJob %s: %w", key, err)
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return observed{}, fmt.Errorf("list nodes: %w", err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })

	logger := klog.FromContext(ctx)
	g.tally = tallyPods(pods, job.Spec.FailurePolicy.RestartLimit)
	g.place = place(logger, newEligibility(logger, &job.Spec.Template.Spec), nodes, g.tally.byNode)
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
