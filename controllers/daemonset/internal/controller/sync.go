package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// Event reasons (upstream's where it has one).
const (
	EventSelectingAll        = "SelectingAll"
	EventFailedDaemonPod     = "FailedDaemonPod"
	EventSucceededDaemonPod  = "SucceededDaemonPod"
	EventFailedCreate        = "FailedCreate"
	EventFailedDelete        = "FailedDelete"
	EventSuccessfulCreate    = "SuccessfulCreate"
	EventSuccessfulDelete    = "SuccessfulDelete"
	EventInvalidSpec         = "InvalidSpec"
	EventSuccessfulInPlace   = "SuccessfulUpdatePodInPlace"
	EventFailedInPlaceUpdate = "FailedUpdatePodInPlace"
)

// syncState is what one sync knows about a DaemonSet. Everything in it comes
// from informer caches and is read-only.
type syncState struct {
	key types.NamespacedName
	ds  *appsv1alpha1.DaemonSet
	now time.Time
	// pods are the DaemonSet's pods, nodes its view of every node and of
	// the nodes its pods target, sorted by name.
	pods  []*corev1.Pod
	nodes []*nodeState
	// revisions are the DaemonSet's ControllerRevisions, oldest first;
	// update is the current template's, hash its hash.
	revisions      []*appsv1.ControllerRevision
	update         *appsv1.ControllerRevision
	hash           string
	generation     *string
	collisionCount int32
	// observed: the sync got past the expectations, observedGeneration may
	// move (upstream does the same).
	observed bool
	// invalid says why the spec cannot be acted on ("" if it can).
	invalid, invalidReason string
	requeue                controller.Requeue
}

// sync reconciles one DaemonSet: expectations → gather → manage (place and
// clean up pods) → rolling update → history → status.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	ds, sel, err := c.load(ctx, key)
	if ds == nil || err != nil {
		return err
	}
	if adopted, err := c.adoptOrphans(ctx, ds, sel); err != nil || adopted {
		if adopted {
			c.queue.AddAfter(key, podUpdateBatch)
		}
		return err
	}
	// Expectations first, pods second: the informer stores a pod before its
	// handler observes it, so a creation observed between a read of the
	// pods and a look at the expectations would be in neither, and its node
	// would get a second pod.
	exp := c.expectationsOf(ctx, key, ds)
	st, err := c.gather(ctx, key, ds)
	if err != nil {
		return err
	}
	st.requeue.After(exp.pendingFor)
	if wait := c.staleCache(st); wait > 0 {
		klog.FromContext(ctx).V(4).Info("Waiting for the cache to show our own writes", "wait", wait)
		c.queue.AddAfter(key, wait)
		return nil
	}
	var actErr error
	switch {
	case exp.deletesPendingFor > 0:
		c.queue.AddAfter(key, exp.deletesPendingFor)
	case st.invalid != "":
		st.observed = true // reported in the condition; nothing to act on
	default:
		st.observed = true
		actErr = c.act(ctx, st, exp.pending)
	}
	if err := c.truncateHistory(ctx, st); err != nil {
		actErr = errors.Join(actErr, err)
	}
	if err := c.updateStatus(ctx, st); err != nil {
		return errors.Join(actErr, err)
	}
	if controller.Retryable(actErr) != nil {
		return actErr
	}
	if d := st.requeue.Earliest(); d > 0 {
		c.queue.AddAfter(key, d)
	}
	return actErr // nil, or permanent (reported in the status): not retried
}

// load returns the DaemonSet of key and its selector, or nil when there is
// nothing to do: gone (its expectations are dropped), being deleted (its
// pods and revisions go with it), or selecting everything (admission rejects
// that; an object stored before the rules must not make this controller
// claim every pod).
func (c *Controller) load(ctx context.Context, key types.NamespacedName) (*appsv1alpha1.DaemonSet, labels.Selector, error) {
	ds, err := c.sets.DaemonSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.deletes.Delete(key)
		c.creates.Forget(key)
		c.pacer.Forget(key)
		return nil, nil, nil
	}
	if err != nil || ds.DeletionTimestamp != nil {
		return nil, nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Event(ds, corev1.EventTypeWarning, EventSelectingAll, "This DaemonSet is selecting all pods (or none can be parsed). A non-empty selector is required.")
		return nil, nil, nil
	}
	return ds, sel, nil
}

// expectationState is what the expectations say before a sync looks at pods.
type expectationState struct {
	// pending are the nodes whose created pod the cache does not show yet;
	// pendingFor is when the earliest of those expectations expires.
	pending    sets.Set[string]
	pendingFor time.Duration
	// deletesPendingFor > 0: deletions not yet observed, wait that long at
	// most (an event usually comes first).
	deletesPendingFor time.Duration
}

func (c *Controller) expectationsOf(ctx context.Context, key types.NamespacedName, ds *appsv1alpha1.DaemonSet) expectationState {
	var e expectationState
	e.pending, e.pendingFor = c.creates.Pending(key, ds.UID, func(name string) bool {
		_, exists, err := c.pods.GetByKey(ds.Namespace + "/" + name)
		if err != nil {
			// The in-memory store does not fail today; if a cache ever does, the pod counts as not seen yet:
			// the controller waits for it (the expectation expires) rather than risk a second pod on the node.
			klog.FromContext(ctx).Error(err, "Reading a created pod from the cache; treating it as not seen yet", "pod", name)
			return false
		}
		return exists
	})
	seen, age := c.deletes.Satisfied(key)
	if !seen {
		e.deletesPendingFor = max(c.deletes.Timeout()-age, time.Millisecond)
	} else if age > 0 {
		klog.FromContext(ctx).Info("Deletion expectations timed out: an event was lost, acting on the cache", "after", age)
	}
	return e
}

// act places and cleans up pods and, once nothing of that is in flight,
// takes the next rolling-update step.
func (c *Controller) act(ctx context.Context, st *syncState, pending sets.Set[string]) error {
	c.preDownload(ctx, st)
	refreshed, refreshErr := c.refreshPods(ctx, st)
	acted, err := c.manage(ctx, st, pending)
	err = errors.Join(refreshErr, err)
	if err != nil || acted || refreshed || pending.Len() > 0 {
		// The update's budgets are computed from pods; wait until the
		// cache shows what manage did.
		return err
	}
	if rollingUpdate(st.ds) == nil || paused(st.ds) {
		return nil
	}
	return c.rollOut(ctx, st)
}

// gather reads the DaemonSet's pods, the nodes and its revisions from the
// caches and syncs the revisions.
func (c *Controller) gather(ctx context.Context, key types.NamespacedName, ds *appsv1alpha1.DaemonSet) (*syncState, error) {
	st := &syncState{key: key, ds: ds, now: c.clock.Now(), generation: templateGeneration(ds)}
	objs, err := controller.ByOwnerUID(c.pods, ds.UID)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && metav1.IsControlledBy(p, ds) {
			st.pods = append(st.pods, p)
		}
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	st.nodes = groupByNode(c.placement.verdicts(klog.FromContext(ctx), ds, nodes), st.pods)
	if why, reason := invalidSpec(ds); why != "" {
		st.invalid, st.invalidReason = why, reason
		c.recorder.Eventf(ds, corev1.EventTypeWarning, EventInvalidSpec, "%s", why)
	} else if why := c.rejected.of(ds); why != "" {
		st.invalid, st.invalidReason = why, reasonPodRejected
	}
	if st.revisions, err = c.revisions.List(ds); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	if err := c.syncRevisions(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// invalidSpec says what admission cannot check but makes the spec
// unusable ("" if nothing): selector expressions the template's labels do
// not satisfy (the pods created would not be the DaemonSet's), a
// rollingUpdate.selector that does not parse. Such a DaemonSet gets a
// Warning event and the InvalidSpec condition, and no pod is written until
// the spec changes.
func invalidSpec(ds *appsv1alpha1.DaemonSet) (why, reason string) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return fmt.Sprintf("spec.selector: %v", err), "InvalidSelector"
	}
	if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		return "spec.template.metadata.labels: the selector does not match the template's labels", "SelectorMismatch"
	}
	if ru := rollingUpdate(ds); ru != nil && ru.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(ru.Selector); err != nil {
			return fmt.Sprintf("spec.updateStrategy.rollingUpdate.selector: %v", err), "InvalidSelector"
		}
	}
	return "", ""
}

// syncRevisions finds or creates the update revision (re-using an equal
// older one on rollback, as `kubectl kruise rollout undo` expects). Like
// upstream's, a DaemonSet revision carries its hash in the
// controller-revision-hash label its pods carry too.
func (c *Controller) syncRevisions(ctx context.Context, st *syncState) error {
	ds := st.ds
	data, err := revision.TemplatePatch(&ds.Spec.Template)
	if err != nil {
		return fmt.Errorf("encode template: %w", err)
	}
	st.collisionCount = ptr.Deref(ds.Status.CollisionCount, 0)
	labels := make(map[string]string, len(ds.Spec.Template.Labels)+1)
	for k, v := range ds.Spec.Template.Labels {
		labels[k] = v
	}
	labels[pub.ControllerRevisionHashLabelKey] = revision.Hash(data, &st.collisionCount)
	want := revision.New(ds, kindDaemonSet, labels, data, revision.NextRevisionNumber(st.revisions), &st.collisionCount)
	res, err := revision.Resolve(ctx, c.revControl, ds, want, st.revisions, &st.collisionCount)
	if err != nil {
		return err
	}
	st.update, st.revisions = res.Update, res.Revisions
	if res.Written {
		c.rvExp.Expect(st.update)
	}
	// The name's suffix is the hash even after a collision bumped it (the
	// label was computed before).
	st.hash = revision.ShortHash(st.update.Name)
	return nil
}

// staleCache returns how long to wait when the cache does not yet show a
// write this controller made to the DaemonSet, its update revision or a pod.
func (c *Controller) staleCache(st *syncState) time.Duration {
	return expectations.WaitAll(c.rvExp, slices.Values(st.pods), st.ds, st.update)
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit
// that neither the update revision nor a pod uses.
func (c *Controller) truncateHistory(ctx context.Context, st *syncState) error {
	live := sets.New(st.update.Name)
	for _, p := range st.pods {
		if h := p.Labels[pub.ControllerRevisionHashLabelKey]; h != "" {
			live.Insert(h)
		}
	}
	for _, r := range revision.Truncate(st.revisions, live, int(ptr.Deref(st.ds.Spec.RevisionHistoryLimit, 10))) {
		if err := c.revControl.Delete(ctx, r); err != nil {
			return fmt.Errorf("truncate history: %w", err)
		}
	}
	return nil
}
