package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// writeConcurrency bounds the parallel pod writes of one sync; the client's
// QPS/burst still applies on top.
const writeConcurrency = 16

// errInvalidSpec marks a spec the controller cannot act on: reported (Warning
// event, FailedCreatePod condition), not retried.
var errInvalidSpec = controller.Permanent(errors.New("invalid spec"))

// syncState is what one sync knows about a set. Everything in it comes from
// informer caches and is read-only.
type syncState struct {
	key types.NamespacedName
	set *appsv1beta1.StatefulSet
	now time.Time
	// slots are the ordinals the replicas occupy, ascending.
	slots []int
	// pods are the set's pods by ordinal, terminating ones included.
	pods map[int]*corev1.Pod
	// revisions are the set's ControllerRevisions, oldest first.
	revisions       []*appsv1.ControllerRevision
	current, update *appsv1.ControllerRevision
	collisionCount  int32
	minReadySeconds int32
	// invalid says why the spec cannot be acted on ("" if it can).
	invalid string
	// requeue collects the time-driven requeues the steps ask for.
	requeue controller.Requeue
}

// sync reconciles one set: gather → refresh pods → scale, or else roll
// out → status → history.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	logger := klog.FromContext(ctx)
	set, err := c.sets.StatefulSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.scaleExp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	if ok, age := c.scaleExp.Satisfied(key); !ok {
		logger.V(4).Info("Waiting for pod and claim creations/deletions to be observed", "pending", age)
		c.queue.AddAfter(key, c.scaleExp.Timeout()-age)
		return nil
	} else if age > 0 {
		logger.Info("Scale expectations timed out: an event was lost, acting on the cache", "after", age)
	}
	if adopted, err := c.adoptOrphans(ctx, set); err != nil || adopted {
		if adopted {
			c.queue.AddAfter(key, podUpdateBatch)
		}
		return err
	}
	st, err := c.gather(ctx, key, set)
	if err != nil {
		return err
	}
	if wait := c.staleCache(st); wait > 0 {
		logger.V(4).Info("Waiting for the cache to show our own writes", "wait", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}

	var scaleErr, updateErr error
	if st.invalid != "" {
		// Admission lets some malformed values through (reserveOrdinals
		// strings); retrying cannot fix them, the next spec change will.
		scaleErr = fmt.Errorf("%w: %s", errInvalidSpec, st.invalid)
		c.recorder.Eventf(set, corev1.EventTypeWarning, "InvalidSpec", "%s", st.invalid)
	}
	if set.DeletionTimestamp == nil && st.invalid == "" {
		c.preDownload(ctx, st)
		refreshed, refreshErr := c.refreshPods(ctx, st)
		var acted bool
		acted, scaleErr = c.scale(ctx, st)
		switch {
		case refreshErr != nil:
			updateErr = refreshErr
		case !acted && !refreshed && scaleErr == nil:
			updateErr = c.rollOut(ctx, st)
		}
	}
	if err := c.updateStatus(ctx, st, scaleErr, updateErr); err != nil {
		return err
	}
	if err := c.truncateHistory(ctx, st); err != nil {
		return err
	}
	err = errors.Join(scaleErr, updateErr)
	if controller.Retryable(err) != nil {
		return err
	}
	if d := st.requeue.Earliest(); d > 0 {
		c.queue.AddAfter(key, d)
	}
	// nil, or permanent (reported in status and events; the next spec
	// change brings the set back): the loop does not retry it.
	return err
}

// gather reads the set's pods and revisions from the caches and syncs the
// revisions.
func (c *Controller) gather(ctx context.Context, key types.NamespacedName, set *appsv1beta1.StatefulSet) (*syncState, error) {
	st := &syncState{key: key, set: set, now: c.clock.Now(), pods: map[int]*corev1.Pod{}}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MinReadySeconds != nil {
		st.minReadySeconds = *ru.MinReadySeconds
	}
	reserved, err := reservedOrdinals(set.Spec.ReserveOrdinals)
	if err != nil {
		st.invalid = err.Error()
	}
	start := 0
	if set.Spec.Ordinals != nil && c.gates.Enabled(features.StatefulSetStartOrdinal) {
		start = int(set.Spec.Ordinals.Start)
	}
	// The CRD refuses more than pub.MaxReplicas; a set stored before it did
	// is reported rather than given a slot list of up to 2^31 ordinals.
	if replicas := int(ptr.Deref(set.Spec.Replicas, 1)); replicas > pub.MaxReplicas {
		st.invalid = fmt.Sprintf("spec.replicas: %d is above the maximum %d", replicas, pub.MaxReplicas)
	} else {
		st.slots = slotOrdinals(replicas, start, reserved)
	}
	objs, err := controller.ByOwnerUID(c.pods, set.UID)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || !metav1.IsControlledBy(p, set) {
			continue
		}
		if ord, ok := ordinalOf(set.Name, p.Name); ok {
			st.pods[ord] = p
		}
	}
	if st.revisions, err = c.revisions.List(set); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	if err := c.syncRevisions(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// syncRevisions finds or creates the update revision (re-using an equal
// older one on rollback) and resolves the current revision.
func (c *Controller) syncRevisions(ctx context.Context, st *syncState) error {
	set := st.set
	data, err := revision.TemplatePatch(&set.Spec.Template)
	if err != nil {
		return fmt.Errorf("encode template: %w", err)
	}
	st.collisionCount = ptr.Deref(set.Status.CollisionCount, 0)
	want := revision.New(set, kindStatefulSet, set.Spec.Template.Labels, data, revision.NextRevisionNumber(st.revisions), &st.collisionCount)
	res, err := revision.Resolve(ctx, c.revControl, set, want, st.revisions, &st.collisionCount)
	if err != nil {
		return err
	}
	st.update, st.revisions = res.Update, res.Revisions
	if res.Written {
		c.rvExp.Expect(st.update)
	}
	st.current = st.update
	for _, r := range st.revisions {
		if r.Name == set.Status.CurrentRevision {
			st.current = r
		}
	}
	return nil
}

// staleCache returns how long to wait when the cache does not yet show a
// write this controller made to the set, its update revision or a pod.
func (c *Controller) staleCache(st *syncState) time.Duration {
	return expectations.WaitAll(c.rvExp, maps.Values(st.pods), st.set, st.update)
}

// isUpdated reports whether the pod runs the update revision.
func (st *syncState) isUpdated(p *corev1.Pod) bool {
	return p.Labels[pub.ControllerRevisionHashLabelKey] == st.update.Name
}

// slotPods are the pods in the replica slots, ascending by ordinal.
func (st *syncState) slotPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, min(len(st.slots), len(st.pods)))
	for _, o := range st.slots {
		if p := st.pods[o]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// truncateHistory deletes revisions beyond revisionHistoryLimit, keeping
// the current and update revisions and every revision a pod runs.
func (c *Controller) truncateHistory(ctx context.Context, st *syncState) error {
	live := sets.New(st.update.Name, st.current.Name)
	for _, p := range st.pods {
		if h := p.Labels[pub.ControllerRevisionHashLabelKey]; h != "" {
			live.Insert(h)
		}
	}
	for _, r := range revision.Truncate(st.revisions, live, int(ptr.Deref(st.set.Spec.RevisionHistoryLimit, 10))) {
		if err := c.revControl.Delete(ctx, r); err != nil {
			return fmt.Errorf("truncate history: %w", err)
		}
	}
	return nil
}
