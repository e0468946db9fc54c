package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// act carries out the actions, at most writesInFlight writes at a time, and returns every namespace's
// outcome (in the order of actions), and whether some namespace waits for the cache.
func (c *Controller) act(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, src *source, want desiredMeta, actions []action) ([]outcome, bool) {
	outcomes := make([]outcome, len(actions))
	idx := make([]int, len(actions))
	waits := false
	for i, a := range actions {
		idx[i] = i
		waits = waits || a.op == opWait
	}
	_ = controller.ForEach(idx, writesInFlight, func(i int) error {
		outcomes[i] = c.act1(ctx, rd, src, want, actions[i])
		return nil
	})
	return outcomes, waits
}

// act1 carries out one action.
func (c *Controller) act1(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, src *source, want desiredMeta, a action) outcome {
	o := outcome{ns: a.ns, target: a.op != opDelete}
	logger := klog.FromContext(ctx).WithValues("namespace", a.ns, "kind", src.kind, "name", src.obj.GetName())
	switch a.op {
	case opNone:
		o.ok = true
	case opWait:
	case opNotExist:
		o.failed, o.reason = appsv1alpha1.ResourceDistributionNamespaceNotExists, reasonNotExist
	case opConflict:
		o.failed, o.reason = appsv1alpha1.ResourceDistributionConflictOccurred, reasonConflict
	case opCreate:
		created, err := c.create(ctx, newCopy(src, a.ns, want))
		switch {
		case err == nil:
			c.written.Expect(created)
			logger.V(3).Info("Created copy")
			o.ok = true
		case apierrors.IsAlreadyExists(err):
			// Not in the cache: written before CopyLabel existed, by someone else, or our own create not
			// cached yet. Read it once to tell which.
			return c.adoptOrConflict(ctx, rd, src, want, a.ns)
		default:
			o.failed, o.reason = appsv1alpha1.ResourceDistributionCreateResourceFailed, err.Error()
		}
	case opUpdate:
		return c.update(ctx, src, want, a.existing)
	case opDelete:
		uid := a.existing.GetUID()
		err := c.delete(ctx, src.kind, a.existing)
		if err != nil && !apierrors.IsNotFound(err) {
			o.failed, o.reason = appsv1alpha1.ResourceDistributionDeleteResourceFailed, err.Error()
			break
		}
		c.written.Delete(uid)
		logger.V(3).Info("Deleted copy from a namespace no longer targeted")
		o.ok = true
	}
	return o
}

// adoptOrConflict handles a create that found an object of the name already there.
func (c *Controller) adoptOrConflict(ctx context.Context, rd *appsv1alpha1.ResourceDistribution, src *source, want desiredMeta, ns string) outcome {
	live, err := c.get(ctx, src.kind, ns, src.obj.GetName())
	if err != nil {
		return outcome{ns: ns, target: true, failed: appsv1alpha1.ResourceDistributionGetResourceFailed, reason: err.Error()}
	}
	if !isControlledBy(live, rd.Name) {
		return outcome{ns: ns, target: true, failed: appsv1alpha1.ResourceDistributionConflictOccurred, reason: reasonConflict}
	}
	// Ours but unlabelled (or not cached yet): needsUpdate sees the missing label and writes it back.
	if !needsUpdate(live, src.obj, want) {
		return outcome{ns: ns, target: true, ok: true}
	}
	return c.update(ctx, src, want, live)
}

func (c *Controller) update(ctx context.Context, src *source, want desiredMeta, existing metav1.Object) outcome {
	o := outcome{ns: existing.GetNamespace(), target: true}
	updated, err := c.write(ctx, updatedCopy(existing, src.obj, want))
	if err != nil {
		o.failed, o.reason = appsv1alpha1.ResourceDistributionUpdateResourceFailed, err.Error()
		return o
	}
	c.written.Expect(updated)
	klog.FromContext(ctx).V(3).Info("Updated copy", "namespace", o.ns, "kind", src.kind, "name", src.obj.GetName())
	o.ok = true
	return o
}

// The write seam: the only places copies are written.

func (c *Controller) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	switch x := obj.(type) {
	case *corev1.Secret:
		return c.Kube.CoreV1().Secrets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		return c.Kube.CoreV1().ConfigMaps(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	}
	return nil, fmt.Errorf("unsupported copy type %T", obj)
}

// write updates obj; its resourceVersion makes a concurrent change a conflict (retried on the next sync).
func (c *Controller) write(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	switch x := obj.(type) {
	case *corev1.Secret:
		return c.Kube.CoreV1().Secrets(x.Namespace).Update(ctx, x, metav1.UpdateOptions{})
	case *corev1.ConfigMap:
		return c.Kube.CoreV1().ConfigMaps(x.Namespace).Update(ctx, x, metav1.UpdateOptions{})
	}
	return nil, fmt.Errorf("unsupported copy type %T", obj)
}

func (c *Controller) get(ctx context.Context, kind, ns, name string) (metav1.Object, error) {
	if kind == kindSecret {
		return c.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	return c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// delete removes a copy, with a UID precondition so that an object re-created under the name meanwhile is
// not deleted.
func (c *Controller) delete(ctx context.Context, kind string, obj metav1.Object) error {
	uid := obj.GetUID()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if kind == kindSecret {
		return c.Kube.CoreV1().Secrets(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
	}
	return c.Kube.CoreV1().ConfigMaps(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
}
