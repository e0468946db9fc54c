package predownload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// JobClient is the part of the generated ImagePullJob client Control uses
// (client.AppsV1alpha1().ImagePullJobs(namespace) satisfies it), so kit
// does not depend on the generated clientset.
type JobClient interface {
	Create(ctx context.Context, job *appsv1alpha1.ImagePullJob, opts metav1.CreateOptions) (*appsv1alpha1.ImagePullJob, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Control carries decisions out.
type Control struct {
	// Kube labels ControllerRevisions.
	Kube kubernetes.Interface
	// Jobs returns the ImagePullJob client of a namespace.
	Jobs func(namespace string) JobClient
	// Cache holds ImagePullJobs indexed by owner UID
	// (controller.AddOwnerUIDIndex); read-only.
	Cache    cache.Indexer
	Recorder record.EventRecorder
}

// NewControl builds a Control over the ImagePullJob informer jobs, adding
// its owner-UID index (call it before the informer starts).
func NewControl(kube kubernetes.Interface, jobs func(namespace string) JobClient, inf cache.SharedIndexInformer, recorder record.EventRecorder) (*Control, error) {
	if err := controller.AddOwnerUIDIndex(inf); err != nil {
		return nil, err
	}
	return &Control{Kube: kube, Jobs: jobs, Cache: inf.GetIndexer(), Recorder: recorder}, nil
}

// Reconcile is a workload sync's pre-download step: Sync, then expect (the
// caller's resource-version expectation) on a revision it labelled. A
// failure only costs the optimisation: it is logged (and, for a job that
// could not be created, reported as an event), never returned, so the
// rollout goes on.
func (c *Control) Reconcile(ctx context.Context, w Workload, in Input, expect func(metav1.Object)) {
	out, err := c.Sync(ctx, w, in)
	if out != nil {
		expect(out)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Image pre-download", "workload", klog.KObj(w.Owner))
	}
}

// Sync decides (Decide) and acts for one sync of a workload. It returns the
// update revision when it labelled it (for the caller's resource-version
// expectations), else nil.
//
// Failures only cost the optimisation: callers log them and go on with the
// rollout. A job that fails to be created (other than already existing)
// leaves the revision unlabelled, so the next sync tries again; OpenKruise
// labels it anyway and never retries.
func (c *Control) Sync(ctx context.Context, w Workload, in Input) (*appsv1.ControllerRevision, error) {
	return c.Act(ctx, w, in.Update, Decide(in))
}

// Act carries out a decision (Decide, DecideDaemonSet) about update, the
// workload's update revision, with Sync's error handling.
func (c *Control) Act(ctx context.Context, w Workload, update *appsv1.ControllerRevision, d Decision) (*appsv1.ControllerRevision, error) {
	logger := klog.FromContext(ctx)
	if d.Action != DeleteJobs {
		logger.V(4).Info("Image pre-download", "action", d.Action, "reason", d.Reason, "revision", klog.KObj(update))
	}
	switch d.Action {
	case DeleteJobs:
		return nil, c.DeleteJobs(ctx, w.Owner)
	case Ignore:
		return c.labelRevision(ctx, update, pub.ImagePreDownloadIgnoredKey)
	case Create:
		var errs []error
		for _, container := range slices.Sorted(maps.Keys(d.Images)) {
			if err := c.createJob(ctx, w, NewJob(w, update, container, d.Images[container])); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return c.labelRevision(ctx, update, pub.ImagePreDownloadCreatedKey)
	}
	return nil, nil
}

func (c *Control) createJob(ctx context.Context, w Workload, job *appsv1alpha1.ImagePullJob) error {
	_, err := c.Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		c.Recorder.Eventf(w.Owner, corev1.EventTypeWarning, "FailedCreateImagePullJob", "failed to create ImagePullJob %s: %v", job.Name, err)
		return fmt.Errorf("create ImagePullJob %s: %w", job.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created ImagePullJob", "job", klog.KObj(job), "image", job.Spec.Image)
	c.Recorder.Eventf(w.Owner, corev1.EventTypeNormal, "CreatedImagePullJob", "created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
	return nil
}

// DeleteJobs deletes the ImagePullJobs the owner controls (as the cache
// shows them). Each delete carries the cached job's UID as a precondition:
// a job of the same name made since (a later revision's) is not the one the
// cache showed, and is left to the sync its creation triggers.
func (c *Control) DeleteJobs(ctx context.Context, owner metav1.Object) error {
	jobs, err := controller.Controlled[*appsv1alpha1.ImagePullJob](c.Cache, owner)
	if err != nil {
		return fmt.Errorf("list ImagePullJobs: %w", err)
	}
	for _, job := range jobs {
		if job.DeletionTimestamp != nil {
			continue
		}
		err := c.Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(job.UID))})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone, or replaced by another job of that name
		}
		if err != nil {
			return fmt.Errorf("delete ImagePullJob %s: %w", job.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted ImagePullJob", "job", klog.KObj(job))
	}
	return nil
}

func (c *Control) labelRevision(ctx context.Context, rev *appsv1.ControllerRevision, key string) (*appsv1.ControllerRevision, error) {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, key)
	out, err := c.Kube.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("label revision %s %s: %w", rev.Name, key, err)
	}
	return out, nil
}
