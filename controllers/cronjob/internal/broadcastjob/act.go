package broadcastjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// Event reasons (besides the condition reasons).
const (
	EventSuccessfulCreate = "SuccessfulCreate"
	EventFailedCreate     = "FailedCreate"
	EventSuccessfulDelete = "SuccessfulDelete"
	EventPaused           = "Paused"
)

// act carries out the verdict and the plan. Every step runs even if an earlier one failed; errors are joined. It
// never writes the job's spec: a pause by failurePolicy shows in status.phase only, as in OpenKruise.
func (c *Controller) act(ctx context.Context, key types.NamespacedName, job *appsv1alpha1.BroadcastJob, v verdict, plan podPlan) error {
	logger := klog.FromContext(ctx)
	var errs []error
	if f := v.finish; f != nil {
		eventType := corev1.EventTypeNormal
		if f.Type == appsv1alpha1.JobFailed {
			eventType = corev1.EventTypeWarning
		}
		c.Recorder.Event(job, eventType, f.Reason, f.Message)
		logger.Info("BroadcastJob finished", "condition", f.Type, "reason", f.Reason, "message", f.Message)
	}
	if v.pauseEvent {
		c.Recorder.Event(job, corev1.EventTypeWarning, EventPaused,
			"failurePolicy is Pause and a pod failed: no pod is created or deleted until the failed pods are deleted")
		logger.Info("BroadcastJob paused by its failurePolicy")
	}
	for _, pod := range plan.delete {
		err := c.PodControl.Delete(ctx, pod, nil)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.Recorder.Eventf(job, corev1.EventTypeNormal, EventSuccessfulDelete, "Deleted pod %s (node %s)", pod.Name, nodeplacement.TargetNode(pod))
	}
	if err := c.createPods(ctx, key, job, plan.create); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// createPods creates one pod per node in slow-start batches (1, 2, 4, ...; kit/controller.SlowStart), stopping
// after a batch with a failure, so a job that cannot create pods (quota, admission) costs a few requests per retry,
// not one per node.
func (c *Controller) createPods(ctx context.Context, key types.NamespacedName, job *appsv1alpha1.BroadcastJob, nodes []string) error {
	_, err := controller.SlowStart(len(nodes), createInFlight, func(i int) error { return c.createPod(ctx, key, job, nodes[i]) })
	return err
}

// createInFlight bounds the concurrent pod creations of one sync (one per node: a 1,000-node cluster must not
// send 512 at once, which API Priority and Fairness answers with 429s).
const createInFlight = 32

func (c *Controller) createPod(ctx context.Context, key types.NamespacedName, job *appsv1alpha1.BroadcastJob, node string) error {
	// Expected before the request (PodControl): if the outcome is unknown (timeout), the node stays blocked
	// until the expectation expires rather than getting a second pod; only a definite refusal unblocks it.
	exp := podcontrol.NodeExpectations[types.NamespacedName]{Exp: c.creates, Key: key, UID: job.UID, Node: node, Lowered: podcontrol.Rejected}
	pod, err := c.PodControl.Create(ctx, newPod(job, node), exp)
	if err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, EventFailedCreate, "Error creating pod for node %s: %v", node, err)
		return fmt.Errorf("create pod for node %s: %w", node, err)
	}
	klog.FromContext(ctx).V(2).Info("Created pod", "pod", klog.KObj(pod), "node", node)
	c.Recorder.Eventf(job, corev1.EventTypeNormal, EventSuccessfulCreate, "Created pod %s for node %s", pod.Name, node)
	return nil
}

// deleteJob deletes a finished job whose TTL has passed; the garbage collector removes its pods.
func (c *Controller) deleteJob(ctx context.Context, job *appsv1alpha1.BroadcastJob) error {
	uid := job.UID
	policy := metav1.DeletePropagationBackground
	err := c.client.AppsV1alpha1().BroadcastJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete BroadcastJob %s/%s after its TTL: %w", job.Namespace, job.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted finished BroadcastJob after ttlSecondsAfterFinished")
	return nil
}
