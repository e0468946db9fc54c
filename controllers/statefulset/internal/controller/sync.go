package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/workload"
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
	// Revisions: the set's history, current and update revisions.
	workload.Revisions
	minReadySeconds int32
	// invalid says why the spec cannot be acted on ("" if it can).
	invalid string
	// requeue collects the time-driven requeues the steps ask for.
	requeue controller.Requeue
}

// sync reconciles one set: gather → refresh pods → scale, or else roll
// out → status → history.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	set, ok, err := workload.Get(c.Base, key, c.sets.StatefulSets(key.Namespace).Get, c.forget)
	if !ok || c.ScaleInFlight(ctx, key, c.scaleExp) {
		return err
	}
	if adopted, err := c.adoptOrphans(ctx, set); err != nil || adopted {
		if adopted {
			c.Queue.AddAfter(key, podUpdateBatch)
		}
		return err
	}
	st, err := c.gather(ctx, key, set)
	if err != nil || c.OwnWritesPending(ctx, key, maps.Values(st.pods), st.set, st.Update) {
		return err
	}

	var scaleErr, updateErr error
	if st.invalid != "" {
		// Admission lets some malformed values through (reserveOrdinals
		// strings); retrying cannot fix them, the next spec change will.
		scaleErr = fmt.Errorf("%w: %s", errInvalidSpec, st.invalid)
		c.Recorder.Eventf(set, corev1.EventTypeWarning, "InvalidSpec", "%s", st.invalid)
	}
	if set.DeletionTimestamp == nil && st.invalid == "" {
		c.PreDownload(ctx, jobWorkload(set), func() predownload.Input { return preDownloadInput(set, st.Current, st.Update) })
		_, scaleErr, updateErr = workload.TakeSteps(ctx, st, c.refreshPods, c.scale, c.rollOut)
	}
	if err := c.updateStatus(ctx, st, scaleErr, updateErr); err != nil {
		return err
	}
	if err := c.TruncateHistory(ctx, st.Revisions, set.Spec.RevisionHistoryLimit, maps.Values(st.pods)); err != nil {
		return err
	}
	// Permanent errors are reported in status and events; the next spec
	// change brings the set back.
	return c.Finish(key, errors.Join(scaleErr, updateErr), &st.requeue)
}

// gather reads the set's pods and revisions from the caches and syncs the
// revisions.
func (c *Controller) gather(ctx context.Context, key types.NamespacedName, set *appsv1beta1.StatefulSet) (*syncState, error) {
	st := &syncState{key: key, set: set, now: c.Clock.Now(), pods: map[int]*corev1.Pod{}}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MinReadySeconds != nil {
		st.minReadySeconds = *ru.MinReadySeconds
	}
	reserved, err := reservedOrdinals(set.Spec.ReserveOrdinals)
	if err != nil {
		st.invalid = err.Error()
	}
	start := 0
	if set.Spec.Ordinals != nil && c.Gates.Enabled(features.StatefulSetStartOrdinal) {
		start = int(set.Spec.Ordinals.Start)
	}
	// The CRD refuses more than pub.MaxReplicas; a set stored before it did
	// is reported rather than given a slot list of up to 2^31 ordinals.
	if replicas := int(ptr.Deref(set.Spec.Replicas, 1)); replicas > pub.MaxReplicas {
		st.invalid = fmt.Sprintf("spec.replicas: %d is above the maximum %d", replicas, pub.MaxReplicas)
	} else {
		st.slots = slotOrdinals(replicas, start, reserved)
	}
	pods, err := c.OwnedPods(set)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if ord, ok := ordinalOf(set.Name, p.Name); ok {
			st.pods[ord] = p
		}
	}
	if err := c.syncRevisions(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// syncRevisions finds or creates the update revision (re-using an equal
// older one on rollback) and resolves the current revision.
func (c *Controller) syncRevisions(ctx context.Context, st *syncState) error {
	var err error
	st.Revisions, err = c.SyncRevisions(ctx, workload.RevisionRequest{
		Owner: st.set, Kind: kindStatefulSet, Template: &st.set.Spec.Template,
		CollisionCount: st.set.Status.CollisionCount, CurrentRevision: st.set.Status.CurrentRevision,
	})
	return err
}

// isUpdated reports whether the pod runs the update revision.
func (st *syncState) isUpdated(p *corev1.Pod) bool {
	return p.Labels[pub.ControllerRevisionHashLabelKey] == st.Update.Name
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
