package advancedcronjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// createChild creates the child for the run scheduled at t. It returns nil and no error when the child already
// exists: the name is per slot, so an earlier attempt (this process before a lost cache update, or a previous
// process) already made it.
func (c *Controller) createChild(ctx context.Context, acj *appsv1alpha1.AdvancedCronJob, t time.Time) (*child, error) {
	logger := klog.FromContext(ctx)
	name := childName(acj, t)
	kind := templateKind(acj)
	var obj metav1.Object // only read when err is nil
	var err error
	switch kind {
	case appsv1alpha1.JobTemplate:
		obj, err = c.Kube.BatchV1().Jobs(acj.Namespace).Create(ctx, newJob(acj, t), metav1.CreateOptions{})
	case appsv1alpha1.BroadcastJobTemplate:
		obj, err = c.Client.AppsV1alpha1().BroadcastJobs(acj.Namespace).Create(ctx, newBroadcastJob(acj, t), metav1.CreateOptions{})
	default:
		return nil, nil // no template: the API server's validation makes this unreachable
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		logger.V(2).Info("Child for this run already exists", "child", name, "scheduled", t)
		return nil, nil
	case apierrors.IsInvalid(err):
		// The API server rejects what the template makes (e.g. a Job name longer than 63 characters): a retry
		// cannot help; the next start time tries again.
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, "FailedCreate", "Error creating %s %s: %v", kind, name, err)
		return nil, controller.Permanent(fmt.Errorf("create %s %s/%s: %w", kind, acj.Namespace, name, err))
	case err != nil:
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, "FailedCreate", "Error creating %s %s: %v", kind, name, err)
		return nil, fmt.Errorf("create %s %s/%s: %w", kind, acj.Namespace, name, err)
	}
	created := summarize(kind, obj, running)
	logger.Info("Created child", "kind", kind, "child", klog.KRef(acj.Namespace, name), "scheduled", t)
	c.Recorder.Eventf(acj, corev1.EventTypeNormal, "SuccessfulCreate", "Created %s %s", kind, name)
	return &created, nil
}

// deleteChild deletes ch with background propagation (its pods go afterwards, through the garbage collector).
// The UID precondition keeps a stale cache from deleting a newer object of the same name.
func (c *Controller) deleteChild(ctx context.Context, acj *appsv1alpha1.AdvancedCronJob, ch child, why string) error {
	opts := metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: ptr.To(ch.UID)},
	}
	var err error
	switch ch.Kind {
	case appsv1alpha1.JobTemplate:
		err = c.Kube.BatchV1().Jobs(acj.Namespace).Delete(ctx, ch.Name, opts)
	case appsv1alpha1.BroadcastJobTemplate:
		err = c.Client.AppsV1alpha1().BroadcastJobs(acj.Namespace).Delete(ctx, ch.Name, opts)
	}
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil // already gone (or replaced by another object of that name)
	case err != nil:
		c.Recorder.Eventf(acj, corev1.EventTypeWarning, "FailedDelete", "Error deleting %s %s: %v", ch.Kind, ch.Name, err)
		return fmt.Errorf("delete %s %s/%s: %w", ch.Kind, acj.Namespace, ch.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted child", "kind", ch.Kind, "child", klog.KRef(acj.Namespace, ch.Name), "why", why)
	c.Recorder.Eventf(acj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted %s %s (%s)", ch.Kind, ch.Name, why)
	return nil
}
