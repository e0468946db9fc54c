package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one ResourceDistribution: gather (caches) → plan (pure) → act (bounded writes) → status
// (pure, written only when it changed).
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	logger := klog.FromContext(ctx)
	rd, err := c.rds.Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Copies carry the distribution as controller: the garbage collector deletes them.
		return nil
	}
	if err != nil {
		return fmt.Errorf("get ResourceDistribution %s: %w", key.Name, err)
	}
	if rd.DeletionTimestamp != nil {
		return nil
	}
	if ok, wait := c.written.Satisfied(rd); !ok {
		// Our last status write is not in the cache yet: acting on this copy would fail the next status write
		// on a conflict. Its update event requeues the distribution; the delay is the fallback.
		c.queue.AddAfter(key, wait)
		return nil
	}
	src, err := parseSource(rd)
	if err != nil {
		c.recorder.Event(rd, corev1.EventTypeWarning, "InvalidResource", err.Error())
		return controller.Permanent(err)
	}
	sel, err := newTargetSelector(&rd.Spec.Targets)
	if err != nil {
		c.recorder.Event(rd, corev1.EventTypeWarning, "InvalidTargets", err.Error())
		return controller.Permanent(err)
	}
	in, err := c.gather(rd, src, sel)
	if err != nil {
		return err
	}
	actions := plan(in)
	if limitWrites(actions, maxWritesPerSync) {
		// The rest is the next sync's: an immediate requeue, after this one.
		defer c.queue.Enqueue(key)
	}
	outcomes, waits := c.act(ctx, rd, src, in.want, actions)
	if waits {
		// A write of ours is not in the cache yet; its informer event normally requeues sooner.
		defer c.queue.AddAfter(key, c.written.Timeout())
	}
	st := calculateStatus(&rd.Status, rd.Generation, len(in.targets), outcomes, metav1.NewTime(c.clock.Now()))
	var errs []error
	for _, o := range outcomes {
		// Conflicts and missing namespaces wait for an event (as in OpenKruise); API errors are retried.
		if !o.ok && o.failed != "" && o.failed != appsv1alpha1.ResourceDistributionConflictOccurred &&
			o.failed != appsv1alpha1.ResourceDistributionNamespaceNotExists {
			errs = append(errs, fmt.Errorf("%s in namespace %s: %s", o.failed, o.ns, o.reason))
		}
	}
	if statusChanged(&rd.Status, &st) {
		next := rd.DeepCopy()
		next.Status = st
		written, err := c.client.AppsV1alpha1().ResourceDistributions().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Deleted meanwhile: its copies go with it.
		case err != nil:
			errs = append(errs, fmt.Errorf("update status of ResourceDistribution %s: %w", rd.Name, err))
		default:
			c.written.Expect(written)
			logger.V(2).Info("Updated status", "desired", st.Desired, "succeeded", st.Succeeded, "failed", st.Failed)
		}
	}
	return errors.Join(errs...)
}

// gather reads what plan needs from the caches.
func (c *Controller) gather(rd *appsv1alpha1.ResourceDistribution, src *source, sel *targetSelector) (planInput, error) {
	nsList, err := c.namespaces.List(labels.Everything())
	if err != nil {
		return planInput{}, fmt.Errorf("list namespaces: %w", err)
	}
	nss := make(map[string]*corev1.Namespace, len(nsList))
	for _, ns := range nsList {
		nss[ns.Name] = ns
	}
	idx := c.copies[src.kind]
	objs, err := idx.ByIndex(controllerNameIndex, rd.Name)
	if err != nil {
		return planInput{}, fmt.Errorf("list copies of ResourceDistribution %s: %w", rd.Name, err)
	}
	owned := make([]metav1.Object, 0, len(objs))
	for _, obj := range objs {
		if o, ok := controller.ObjectOf(obj); ok && o.GetName() == src.obj.GetName() {
			owned = append(owned, o)
		}
	}
	return planInput{
		rdName:     rd.Name,
		src:        src,
		want:       newDesiredMeta(rd, src),
		targets:    sel.targetNamespaces(nsList),
		namespaces: nss,
		cached: func(ns string) metav1.Object {
			obj, ok, err := idx.GetByKey(ns + "/" + src.obj.GetName())
			if err != nil || !ok {
				return nil
			}
			o, _ := controller.ObjectOf(obj)
			return o
		},
		owned: owned,
		pending: func(obj metav1.Object) bool {
			ok, _ := c.written.Satisfied(obj)
			return !ok
		},
	}, nil
}

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
		return c.kube.CoreV1().Secrets(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		return c.kube.CoreV1().ConfigMaps(x.Namespace).Create(ctx, x, metav1.CreateOptions{})
	}
	return nil, fmt.Errorf("unsupported copy type %T", obj)
}

// write updates obj; its resourceVersion makes a concurrent change a conflict (retried on the next sync).
func (c *Controller) write(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	switch x := obj.(type) {
	case *corev1.Secret:
		return c.kube.CoreV1().Secrets(x.Namespace).Update(ctx, x, metav1.UpdateOptions{})
	case *corev1.ConfigMap:
		return c.kube.CoreV1().ConfigMaps(x.Namespace).Update(ctx, x, metav1.UpdateOptions{})
	}
	return nil, fmt.Errorf("unsupported copy type %T", obj)
}

func (c *Controller) get(ctx context.Context, kind, ns, name string) (metav1.Object, error) {
	if kind == kindSecret {
		return c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	return c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// delete removes a copy, with a UID precondition so that an object re-created under the name meanwhile is
// not deleted.
func (c *Controller) delete(ctx context.Context, kind string, obj metav1.Object) error {
	uid := obj.GetUID()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if kind == kindSecret {
		return c.kube.CoreV1().Secrets(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
	}
	return c.kube.CoreV1().ConfigMaps(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
}
