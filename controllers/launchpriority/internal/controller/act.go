package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// act carries out p for pod. A barrier the cache does not hold but the API server does (one made by
// OpenKruise, without barrier.Label) makes the create fail with AlreadyExists: it is read live and planned
// again, once.
func (c *Controller) act(ctx context.Context, pod *corev1.Pod, cm *corev1.ConfigMap, p plan) error {
	if p.Report {
		return c.reportMissing(ctx, pod)
	}
	if p.Stale {
		if err := c.deleteStale(ctx, cm); err != nil {
			return err
		}
		cm, p = nil, planPod(pod, nil)
	}
	switch {
	case p.Create:
		created, err := c.createBarrier(ctx, pod, p.Open)
		if apierrors.IsAlreadyExists(err) {
			live, gerr := c.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, barrier.Name(pod.Name), metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("get barrier of pod %s/%s: %w", pod.Namespace, pod.Name, gerr)
			}
			if again := planPod(pod, live); !again.Create {
				return c.act(ctx, pod, live, again)
			}
			return fmt.Errorf("barrier of pod %s/%s exists but is not found", pod.Namespace, pod.Name)
		}
		if err != nil {
			return err
		}
		c.written.Expect(created)
	case p.Open != "":
		if err := c.openKey(ctx, cm, p.Open); err != nil {
			return err
		}
	}
	if p.Complete {
		return c.markCompleted(ctx, pod)
	}
	return nil
}

// createBarrier creates pod's barrier holding key, owned by the pod (as OpenKruise: a plain ownerReference,
// so the garbage collector deletes it with the pod) and labelled barrier.Label for our informer.
func (c *Controller) createBarrier(ctx context.Context, pod *corev1.Pod, key string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: barrier.Name(pod.Name), Namespace: pod.Namespace, Labels: map[string]string{barrier.Label: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Data: map[string]string{key: "true"},
	}
	klog.FromContext(ctx).V(2).Info("Creating barrier", "pod", klog.KObj(pod), "key", key)
	podKey := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.creates.Expect(podKey, expectations.Create, cm.Name)
	out, err := c.Kube.CoreV1().ConfigMaps(pod.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		c.creates.Observe(podKey, expectations.Create, cm.Name) // nothing to wait for
		return nil, fmt.Errorf("create barrier of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}

// openKey adds key to the barrier (and our label, for a barrier made by OpenKruise), guarded by the cached
// resourceVersion.
func (c *Controller) openKey(ctx context.Context, cm *corev1.ConfigMap, key string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cm.ResourceVersion, "labels": map[string]string{barrier.Label: "true"}},
		"data":     map[string]string{key: "true"},
	})
	if err != nil {
		return fmt.Errorf("encode barrier patch: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Opening barrier key", "configMap", klog.KObj(cm), "key", key)
	out, err := c.Kube.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("open key %s of barrier %s/%s: %w", key, cm.Namespace, cm.Name, err)
	}
	c.written.Expect(out)
	return nil
}

// deleteStale deletes a barrier left by an earlier pod of the same name, on condition that it is still that one.
func (c *Controller) deleteStale(ctx context.Context, cm *corev1.ConfigMap) error {
	klog.FromContext(ctx).V(2).Info("Deleting the barrier of an earlier pod of the same name", "configMap", klog.KObj(cm))
	err := c.Kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(cm.UID))})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete stale barrier %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// markCompleted writes OpenKruise's completed annotation: nothing is left to open for the pod.
func (c *Controller) markCompleted(ctx context.Context, pod *corev1.Pod) error {
	next := pod.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[barrier.CompletedKey] = "true"
	out, err := c.pc.Patch(ctx, pod, next)
	if err != nil {
		return fmt.Errorf("mark pod %s/%s launch-priority completed: %w", pod.Namespace, pod.Name, err)
	}
	c.written.Expect(out)
	return nil
}
