package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
)

// The pod loop gives every new pod its first write as soon as it is
// scheduled, independently of its CloneSet's sync: the True conditions of
// the readiness gates the controller injected (without them the pod never
// becomes Ready) together with PreparingNormal → Normal. It has its own
// pod-keyed queue and workers, like OpenKruise's pod-readiness controller, so
// that a CloneSet scaling up by thousands of pods is not serialised behind
// one sync per CloneSet.

// podQueueName names the pod loop's queue (and its metrics).
const podQueueName = Name + "-pods"

// gatedConditions are the readiness gates whose conditions this controller owns.
var gatedConditions = []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType}

// needsInit reports whether a pod carries one of our readiness gates without
// its condition.
func needsInit(p *corev1.Pod) bool { return podreadiness.MissingGateCondition(p, gatedConditions...) }

// newPodHandler enqueues scheduled CloneSet pods that need their first write.
func (c *Controller) newPodHandler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !needsInit(p) {
			return
		}
		if _, owned := Kind.ControllerKey(p); owned {
			c.podQueue.Enqueue(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }}
}

// syncNewPod writes a new pod's gate conditions, and its move to Normal when
// that is due, in one pods/status write.
func (c *Controller) syncNewPod(ctx context.Context, key types.NamespacedName) error {
	obj, exists, err := c.Pods.GetByKey(key.String())
	if err != nil || !exists {
		return err
	}
	p := obj.(*corev1.Pod)
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !needsInit(p) {
		return nil
	}
	setKey, ok := Kind.ControllerKey(p)
	if !ok {
		return nil
	}
	cs, err := c.sets.CloneSets(setKey.Namespace).Get(setKey.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	now := c.Clock.Now()
	next := podreadiness.WithGateConditions(p, now, gatedConditions...)
	if next == nil {
		return nil
	}
	out, err := c.initPod(ctx, p, next, func(p *corev1.Pod) (lifecycle.Decision, error) {
		// A new pod is at the revision it was created with; that matters only
		// for pods already updating, which have their conditions.
		return becomeNormal(cs, p, true, now)
	})
	if apierrors.IsConflict(err) {
		return nil // the kubelet wrote the pod meanwhile; its event brings it back
	}
	if err != nil {
		return err
	}
	c.RV.Expect(out) // the pod's update event brings its CloneSet to count it
	return nil
}

// initPod writes next, p with the conditions of the readiness gates it
// carries (podreadiness.WithGateConditions), and, in the same pods/status
// patch, its move from PreparingNormal to Normal when that is due (the API
// server keeps label and annotation changes made through pods/status). If
// the returned pod does not show the new state, the lifecycle patch is
// written separately.
func (c *Controller) initPod(ctx context.Context, p, next *corev1.Pod, decide func(*corev1.Pod) (lifecycle.Decision, error)) (*corev1.Pod, error) {
	dec, err := decide(p)
	if err != nil {
		return nil, err
	}
	combined := dec.Action == lifecycle.ActionPatch && len(dec.Patch.Finalizers) == 0 &&
		len(dec.Patch.AddNotReady) == 0 && len(dec.Patch.RemoveNotReady) == 0
	if combined {
		dec.Patch.ApplyMetadata(next)
	}
	out, err := c.PodControl.PatchStatus(ctx, p, next)
	if err != nil {
		return nil, fmt.Errorf("initialise readiness conditions of pod %s: %w", p.Name, err)
	}
	if combined && lifecycle.State(out) != dec.Patch.State {
		if err := c.WriteLifecycle(ctx, out, dec.Patch); err != nil {
			return nil, err
		}
	}
	return out, nil
}
