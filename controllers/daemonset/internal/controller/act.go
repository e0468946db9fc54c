package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/lifecycle"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

// writeConcurrency bounds the parallel pod updates (in place, lifecycle,
// conditions) of one sync; the client's QPS/burst still applies on top.
// Creations and deletions run a whole slow-start batch at once, as
// upstream's do: burstReplicas already bounds them, and a DaemonSet landing
// on a thousand nodes should not queue behind a small pool.
const writeConcurrency = 16

// manage carries out planManage: creates on nodes lacking a pod, deletes
// what must go, both capped by burstReplicas. It reports whether it wrote
// anything (the rolling update then waits for the cache).
func (c *Controller) manage(ctx context.Context, st *syncState, pending sets.Set[string]) (bool, error) {
	ds := st.ds
	maxSurge, _ := surgeAndUnavailable(ds, countDesired(st.nodes))
	plan := planManage(manageInput{
		nodes: st.nodes, hash: st.hash, generation: st.generation, surge: maxSurge > 0,
		minReadySeconds: ds.Spec.MinReadySeconds, now: st.now,
		partition: partition(ds, countDesired(st.nodes)), progressive: progressive(ds),
	})
	create := plan.create[:0:0]
	for _, n := range plan.create {
		if !pending.Has(n) { // created already, the cache does not show it yet
			create = append(create, n)
		}
	}
	toDelete := append(plan.delete, c.failedPodsToDelete(ctx, st, plan.failed)...)
	burst := burstReplicas(ds, plan.desired)
	if len(create) > burst {
		create = create[:burst]
	}
	if len(toDelete) > burst {
		toDelete = toDelete[:burst]
	}
	if len(create) == 0 && len(toDelete) == 0 {
		return false, nil
	}
	klog.FromContext(ctx).V(2).Info("Managing daemon pods", "create", len(create), "delete", len(toDelete), "desired", plan.desired)
	deleted, delErr := c.deletePods(ctx, st, toDelete)
	createErr := c.createPods(ctx, st, create, st.hash)
	return len(create) > 0 || deleted > 0, errors.Join(delErr, createErr)
}

// failedPodsToDelete applies the per-node back-off to the failed pods: a
// node whose failed pod was deleted recently waits (1s doubling to 15min),
// so a kubelet that keeps rejecting the pod does not meet a hot loop.
func (c *Controller) failedPodsToDelete(ctx context.Context, st *syncState, failed []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	now := c.Clock.Now()
	for _, p := range failed {
		key := string(st.ds.UID) + "/" + p.Spec.NodeName
		if c.backoff.IsInBackOffSinceUpdate(key, now) {
			d := c.backoff.Get(key)
			klog.FromContext(ctx).V(4).Info("Deleting the failed pod is limited by back-off", "pod", klog.KObj(p), "node", p.Spec.NodeName, "delay", d)
			st.requeue.After(d)
			continue
		}
		c.backoff.Next(key, now)
		c.Recorder.Eventf(st.ds, corev1.EventTypeWarning, EventFailedDaemonPod, "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, p.Spec.NodeName)
		out = append(out, p)
	}
	return out
}

// nameAttempts bounds the retries of a create whose client-chosen name
// another pod has.
const nameAttempts = 3

// createPod creates ds's pod for node. Its name is chosen here (the
// expectation of the node needs it before the response), so it can collide
// with another pod's (about 3 % over 1,000 creates): such a create is tried
// again under another name rather than reported as a failure.
func (c *Controller) createPod(ctx context.Context, st *syncState, node, hash string) (*corev1.Pod, error) {
	var err error
	for range nameAttempts {
		pod := newPod(st.ds, node, hash)
		// The node's expectation is raised before the request and lowered
		// by PodControl unless the answer is AlreadyExists (nothing else was
		// created: nothing to wait for).
		exp := podcontrol.NodeExpectations[types.NamespacedName]{Exp: c.creates, Key: st.key, UID: st.ds.UID, Node: node}
		var created *corev1.Pod
		created, err = c.PodControl.Create(ctx, pod, exp)
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	// The expectation of the last name stays: the cache shows a pod of that
	// name, which releases the node at the next sync.
	return nil, err
}

// createPods creates one pod of revision hash per node in slow-start
// batches (kit/controller.SlowStart: 1, 2, 4, …, each batch all at once),
// stopping at the first batch with a failure. A DaemonSet whose creates have
// been succeeding begins at the batch its last slow start reached (each wave
// of a rolling update would otherwise climb from 1 again, a round trip per
// doubling); a failure sends it back to 1. A pod the API server rejects as invalid is a spec problem
// admission could not see (the template is not validated as a pod until a
// pod is made of it): reported, not retried until the spec changes.
func (c *Controller) createPods(ctx context.Context, st *syncState, nodes []string, hash string) error {
	if len(nodes) == 0 {
		return nil
	}
	ds := st.ds
	var mu sync.Mutex
	var invalid string
	_, reached, err := controller.SlowStartFrom(len(nodes), c.batches.First(st.key), len(nodes), func(i int) error {
		node := nodes[i]
		created, err := c.createPod(ctx, st, node, hash)
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				mu.Lock()
				invalid = rejectionMessage(err)
				mu.Unlock()
			}
			c.Recorder.Eventf(ds, corev1.EventTypeWarning, EventFailedCreate, "Error creating pod on node %s: %v", node, err)
			return fmt.Errorf("create pod on node %s: %w", node, err)
		}
		c.Recorder.Eventf(ds, corev1.EventTypeNormal, EventSuccessfulCreate, "Created pod: %s", created.Name)
		return nil
	})
	c.batches.Reached(st.key, reached)
	if invalid != "" {
		st.invalid, st.invalidReason = "the pod template is rejected by the API server: "+invalid, reasonPodRejected
		c.rejected.remember(ds, st.invalid)
		return controller.Permanent(err)
	}
	return err
}

// deletePods deletes pods, each through the preDelete hook: a hooked pod
// is moved to PreparingDelete (and optionally marked NotReady) instead, and
// deleted once the hook is released. It returns how many deletions it made.
func (c *Controller) deletePods(ctx context.Context, st *syncState, pods []*corev1.Pod) (int, error) {
	if len(pods) == 0 {
		return 0, nil
	}
	ds := st.ds
	var mu sync.Mutex
	deleted := 0
	err := controller.ForEach(pods, len(pods), func(p *corev1.Pod) error {
		d := lifecycle.Decide(ds.Spec.Lifecycle, p, lifecycle.Request{Op: lifecycle.OpDelete}, st.now)
		switch d.Action {
		case lifecycle.ActionPatch:
			out, err := c.Lifecycle.Patch(ctx, p, d.Patch)
			if err != nil {
				return fmt.Errorf("pod %s: %s: %w", p.Name, d.Reason, err)
			}
			if out != nil {
				c.RV.Expect(out)
			}
			return nil
		case lifecycle.ActionProceed:
		default:
			return nil // waiting for the hook to be released
		}
		// Every failed delete lowers its expectation (PodControl), NotFound too.
		err := c.PodControl.Delete(ctx, p, podcontrol.ScaleExpectations[types.NamespacedName]{Exp: c.deletes, Key: st.key, LowerDeleteNotFound: true})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // already gone (or replaced by a namesake)
			}
			c.Recorder.Eventf(ds, corev1.EventTypeWarning, EventFailedDelete, "Error deleting pod %s: %v", p.Name, err)
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		mu.Lock()
		deleted++
		mu.Unlock()
		c.Recorder.Eventf(ds, corev1.EventTypeNormal, EventSuccessfulDelete, "Deleted pod: %s", p.Name)
		return nil
	})
	return deleted, err
}

// rollOut takes one rolling-update step (planRollingUpdate).
func (c *Controller) rollOut(ctx context.Context, st *syncState) error {
	ds := st.ds
	desired := countDesired(st.nodes)
	maxSurge, maxUnavailable := surgeAndUnavailable(ds, desired)
	in := updateInput{
		nodes: st.nodes, hash: st.hash, generation: st.generation, maxSurge: maxSurge, maxUnavailable: maxUnavailable,
		partition: partition(ds, desired), minReadySeconds: ds.Spec.MinReadySeconds, now: st.now,
		pruneIneligible: c.Gates.Enabled(features.DaemonSetPruneIneligibleNodes),
		nodeLabels: func(name string) map[string]string {
			if n, err := c.nodes.Get(name); err == nil {
				return n.Labels
			}
			return nil
		},
	}
	if ru := rollingUpdate(ds); ru.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ru.Selector)
		if err != nil {
			return nil // reported by gather
		}
		in.selector = sel
	}
	plan := planRollingUpdate(in)
	if len(plan.replace) == 0 && len(plan.create) == 0 {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Rolling update step", "replace", len(plan.replace), "create", len(plan.create),
		"maxSurge", maxSurge, "maxUnavailable", maxUnavailable, "hash", st.hash)
	replace := plan.replace
	if inPlaceIfPossible(ds) {
		var err error
		if replace, err = c.updateInPlace(ctx, st, replace); err != nil {
			return err
		}
	}
	burst := burstReplicas(ds, desired)
	if len(replace) > burst {
		replace = replace[:burst]
	}
	create := plan.create
	if len(create) > burst {
		create = create[:burst]
	}
	_, delErr := c.deletePods(ctx, st, replace)
	return errors.Join(delErr, c.createPods(ctx, st, create, st.hash))
}

// rejectionMessage describes why the API server rejected a pod, without the pod's
// (random) name, so that the condition message is the same at every
// attempt and writing it does not wake the DaemonSet again.
func rejectionMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil && len(d.Causes) > 0 {
			parts := make([]string, 0, len(d.Causes))
			for _, c := range d.Causes {
				parts = append(parts, c.Field+": "+c.Message)
			}
			return strings.Join(parts, "; ")
		}
		return string(status.Status().Reason)
	}
	return err.Error()
}

// reasonPodRejected is the InvalidSpec reason for a template the API server
// rejects as a pod.
const reasonPodRejected = "PodRejected"

// rejections remembers, per DaemonSet, the generation whose pod template
// the API server rejected as invalid: no pod is created again for that
// generation (every node event would otherwise cost one failing request);
// the next spec change tries again.
type rejections struct {
	mu    sync.Mutex
	byUID map[types.UID]rejection
}

type rejection struct {
	generation int64
	message    string
}

func (r *rejections) remember(ds *appsv1alpha1.DaemonSet, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byUID[ds.UID] = rejection{generation: ds.Generation, message: message}
}

// of returns why the current generation of ds was rejected ("" if it was
// not), forgetting a rejection of an older generation.
func (r *rejections) of(ds *appsv1alpha1.DaemonSet) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rej, ok := r.byUID[ds.UID]
	if ok && rej.generation != ds.Generation {
		delete(r.byUID, ds.UID)
		return ""
	}
	return rej.message
}

func (r *rejections) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, uid)
}
