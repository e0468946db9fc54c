package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Event reasons of the generated PersistentPodStates (on the StatefulSet).
const (
	ReasonGenerated        = "PersistentPodStateGenerated"
	ReasonGeneratedDeleted = "PersistentPodStateDeleted"
	ReasonNotGenerated     = "PersistentPodStateNotGenerated"
)

// actGenerate carries out a planGenerate decision for the StatefulSet
// owner (reported on in events).
func (c *Controller) actGenerate(ctx context.Context, owner *workload, a genAction) error {
	pps := c.Client.AppsV1alpha1().PersistentPodStates(owner.meta.Namespace)
	logger := klog.FromContext(ctx)
	switch a.verb {
	case genCreate:
		if _, err := pps.Create(ctx, a.want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PersistentPodState %s/%s: %w", a.want.Namespace, a.want.Name, err)
		}
		logger.Info("Generated PersistentPodState", "persistentPodState", klog.KObj(a.want))
		c.event(owner, corev1.EventTypeNormal, ReasonGenerated, "generated PersistentPodState %s", a.want.Name)
	case genUpdate:
		if _, err := pps.Update(ctx, a.want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update PersistentPodState %s/%s: %w", a.want.Namespace, a.want.Name, err)
		}
		logger.Info("Updated generated PersistentPodState", "persistentPodState", klog.KObj(a.want))
	case genDelete:
		uid := a.want.UID
		err := pps.Delete(ctx, a.want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PersistentPodState %s/%s: %w", a.want.Namespace, a.want.Name, err)
		}
		logger.Info("Deleted generated PersistentPodState", "persistentPodState", klog.KObj(a.want))
		c.event(owner, corev1.EventTypeNormal, ReasonGeneratedDeleted, "deleted generated PersistentPodState %s", a.want.Name)
	case genForeign:
		c.event(owner, corev1.EventTypeWarning, ReasonNotGenerated,
			"PersistentPodState %s exists and is not controlled by this StatefulSet: left as it is", a.want.Name)
	}
	return nil
}

// event records on the StatefulSet (a reference: the cached object is not
// handed to the recorder).
func (c *Controller) event(w *workload, eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{APIVersion: w.apiVersion, Kind: "StatefulSet", Namespace: w.meta.Namespace,
		Name: w.meta.Name, UID: w.meta.UID, ResourceVersion: w.meta.ResourceVersion}
	c.Recorder.Eventf(ref, eventType, reason, format, args...)
}

// reportMissed records a Warning event on pps for each pod created without
// its recorded topology.
func (c *Controller) reportMissed(pps *appsv1alpha1.PersistentPodState, missed []missedPod) {
	for _, m := range missed {
		c.Recorder.Eventf(pps, corev1.EventTypeWarning, ReasonNotInjected,
			"pod %s was created without its recorded topology (the pod webhook was not called or failed): it runs on %s, recorded on %s",
			m.Pod, m.Node, m.RecordedNode)
	}
}
