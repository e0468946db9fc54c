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

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// sync reconciles one ResourceDistribution: gather (caches) → plan (pure) → act (bounded writes) → status
// (pure, written only when it changed).
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
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
		c.Queue.AddAfter(key, wait)
		return nil
	}
	src, sel, err := c.parseSpec(rd)
	if err != nil {
		return controller.Permanent(err)
	}
	in, err := c.gather(rd, src, sel)
	if err != nil {
		return err
	}

	actions := plan(in)
	if limitWrites(actions, maxWritesPerSync) {
		// The rest is the next sync's: an immediate requeue, after this one.
		defer c.Queue.Enqueue(key)
	}
	outcomes, waits := c.act(ctx, rd, src, in.want, actions)
	if waits {
		// A write of ours is not in the cache yet; its informer event normally requeues sooner.
		defer c.Queue.AddAfter(key, c.written.Timeout())
	}

	st := calculateStatus(&rd.Status, rd.Generation, len(in.targets), outcomes, metav1.NewTime(c.Clock.Now()))
	return errors.Join(retryErrors(outcomes), c.updateStatus(ctx, rd, st))
}

// parseSpec decodes the source and the targets; what does not decode is reported in a Warning event (the CRD's
// rules reject it: only a distribution stored before them can carry it).
func (c *Controller) parseSpec(rd *appsv1alpha1.ResourceDistribution) (*source, *targetSelector, error) {
	src, err := parseSource(rd)
	if err != nil {
		c.Recorder.Event(rd, corev1.EventTypeWarning, "InvalidResource", err.Error())
		return nil, nil, err
	}
	sel, err := newTargetSelector(&rd.Spec.Targets)
	if err != nil {
		c.Recorder.Event(rd, corev1.EventTypeWarning, "InvalidTargets", err.Error())
		return nil, nil, err
	}
	return src, sel, nil
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
