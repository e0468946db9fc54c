package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// notInjectedMessage says what a pod created without its barrier means for its containers.
const notInjectedMessage = "the pod asks for container launch priorities (apps.kruise.io/container-launch-priority or " +
	"KRUISE_CONTAINER_PRIORITY) but was created without the KRUISE_CONTAINER_BARRIER env: the launch-priority webhook " +
	"was not called (failurePolicy Ignore while it was unavailable), so its containers start in any order"

// reportMissing sets ConditionType=False on a pod created without its barrier and records a Warning event,
// once: the condition is what planPod looks for before reporting again.
func (c *Controller) reportMissing(ctx context.Context, pod *corev1.Pod) error {
	next := pod.DeepCopy()
	next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{
		Type: ConditionType, Status: corev1.ConditionFalse, Reason: ReasonNotInjected, Message: notInjectedMessage,
		LastTransitionTime: metav1.NewTime(c.Clock.Now()),
	})
	out, err := c.pc.PatchStatus(ctx, pod, next)
	if err != nil {
		return fmt.Errorf("report missing barrier of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.written.Expect(out)
	c.Recorder.Event(pod, corev1.EventTypeWarning, ReasonNotInjected, notInjectedMessage)
	return nil
}
