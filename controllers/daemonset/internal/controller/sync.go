package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/workload"
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
	// Revisions: the DaemonSet's history and update revision (the current
	// template's, hash its hash; a DaemonSet's current revision is its
	// update revision).
	workload.Revisions
	hash       string
	generation *string
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
			c.Queue.AddAfter(key, podUpdateBatch)
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
	if c.OwnWritesPending(ctx, key, slices.Values(st.pods), st.ds, st.Update) {
		return nil
	}
	var actErr error
	switch {
	case exp.deletesPendingFor > 0:
		c.Queue.AddAfter(key, exp.deletesPendingFor)
	case st.invalid != "":
		st.observed = true // reported in the condition; nothing to act on
	default:
		st.observed = true
		actErr = c.act(ctx, st, exp.pending)
	}
	if err := c.TruncateHistory(ctx, st.Revisions, ds.Spec.RevisionHistoryLimit, slices.Values(st.pods)); err != nil {
		actErr = errors.Join(actErr, err)
	}
	if err := c.updateStatus(ctx, st); err != nil {
		return errors.Join(actErr, err)
	}
	return c.Finish(key, actErr, &st.requeue) // permanent errors are reported in the status
}

// load returns the DaemonSet of key and its selector, or nil when there is
// nothing to do: gone (its expectations are dropped), being deleted (its
// pods and revisions go with it), or selecting everything (admission rejects
// that; an object stored before the rules must not make this controller
// claim every pod).
func (c *Controller) load(ctx context.Context, key types.NamespacedName) (*appsv1alpha1.DaemonSet, labels.Selector, error) {
	ds, ok, err := workload.Get(c.Base, key, c.sets.DaemonSets(key.Namespace).Get, c.forget)
	if !ok || ds.DeletionTimestamp != nil {
		return nil, nil, err
	}
	sel, ok := workload.Selector(ds.Spec.Selector)
	if !ok {
		c.Recorder.Event(ds, corev1.EventTypeWarning, EventSelectingAll, "This DaemonSet is selecting all pods (or none can be parsed). A non-empty selector is required.")
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
		_, exists, err := c.Pods.GetByKey(ds.Namespace + "/" + name)
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
	st := &syncState{key: key, ds: ds, now: c.Clock.Now(), generation: templateGeneration(ds)}
	pods, err := c.OwnedPods(ds)
	if err != nil {
		return nil, err
	}
	st.pods = pods
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	st.nodes = groupByNode(c.placement.verdicts(klog.FromContext(ctx), ds, nodes), st.pods)
	if why, reason := invalidSpec(ds); why != "" {
		st.invalid, st.invalidReason = why, reason
		c.Recorder.Eventf(ds, corev1.EventTypeWarning, EventInvalidSpec, "%s", why)
	} else if why := c.rejected.of(ds); why != "" {
		st.invalid, st.invalidReason = why, reasonPodRejected
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
	var err error
	st.Revisions, err = c.SyncRevisions(ctx, workload.RevisionRequest{
		Owner: st.ds, Kind: kindDaemonSet, Template: &st.ds.Spec.Template, CollisionCount: st.ds.Status.CollisionCount, HashLabel: true,
	})
	if err != nil {
		return err
	}
	// The name's suffix is the hash even after a collision bumped it (the
	// label was computed before).
	st.hash = revision.ShortHash(st.Update.Name)
	return nil
}
