package inplaceclient

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
	"github.com/flotilla-dev/flotilla/kit/podcontrol/podclient"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// Control performs in-place updates through the API server: the client half
// of kit/inplace, shared by the workloads. Pods handed to it (typically from
// an informer cache) are never modified; every write is a patch of the
// difference between the pod and a modified deep copy (so pods from a slimmed
// cache can be written, see kit/controller.SlimPod) and carries the pod's
// resourceVersion, so a concurrent change makes it fail with Conflict, after
// which the pod is read again and the change recomputed.
type Control struct {
	podclient.Clocked
}

// New returns a Control writing through client; clk stamps states and
// conditions (nil: the real clock).
func New(client kubernetes.Interface, clk clock.PassiveClock) *Control {
	return &Control{Clocked: podclient.NewClocked(client, clk)}
}

// UpdateRequest is one in-place update of a pod.
type UpdateRequest struct {
	// Revision is the name of the revision the pod moves to.
	Revision string
	// Spec is inplace.Diff(old, new) of the pod's revision and Revision.
	Spec inplace.Spec
	// Labels are set on the pod in the same write (e.g. the revision hash
	// labels and the lifecycle state).
	Labels map[string]string
	// Annotations are set on the pod in the same write (e.g. the lifecycle
	// timestamp).
	Annotations map[string]string
	// Mutate, if set, makes further changes to the pod in the same write
	// (e.g. a lifecycle transition). It gets a copy it may modify.
	Mutate func(pod *corev1.Pod)
	// GracePeriodSeconds delays changing the containers
	// (inPlaceUpdateStrategy.gracePeriodSeconds): the pod is marked and its
	// spec parked in the grace annotation; Refresh applies it later.
	GracePeriodSeconds int32
}

// Update moves pod to req.Revision in place. First, when the pod has the
// InPlaceUpdateReady readiness gate, InPlaceUpdateReady=False and the Ready
// condition recomputed from the gates are written through pods/status, so
// the pod leaves Service endpoints before any container restarts. Then the
// pod itself is updated: the first batch of images and metadata (or, with a
// grace period, only the grace annotation), the in-place update state
// annotation, req.Labels and req.Annotations. It returns the pod as written.
//
// Before the status write, the pod write is sent as a dry run (with a
// grace period: the write that will change the containers once it ends):
// when the API server's admission (a webhook, a ValidatingAdmissionPolicy,
// a quota) rejects it, Update returns the rejection having written nothing,
// so the pod stays Ready and in service at its revision; the caller's
// retries then back off instead of flipping the pod NotReady at every
// attempt. A pod left NotReady anyway (a crash or a lost Lease between the
// two writes, a rejection the dry run did not see) is healed by Refresh.
func (c *Control) Update(ctx context.Context, pod *corev1.Pod, req UpdateRequest) (*corev1.Pod, error) {
	cur := pod
	var out *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if cur == nil {
			if cur, err = c.Fresh(ctx, pod); err != nil {
				return err
			}
		}
		next, err := c.updatedPod(cur, req)
		if err != nil {
			return err
		}
		if conds := c.startConditions(cur); conds != nil {
			if err := c.dryRun(ctx, cur, next, req); err != nil {
				if apierrors.IsConflict(err) {
					cur = nil
				}
				return err
			}
			st := cur.DeepCopy()
			st.Status.Conditions = conds
			if cur, err = c.Pods.PatchStatus(ctx, cur, st); err != nil {
				if apierrors.IsConflict(err) {
					cur = nil
				}
				return err
			}
			if next, err = c.updatedPod(cur, req); err != nil { // on the resourceVersion just written
				return err
			}
		}
		out, err = c.Pods.Patch(ctx, cur, next)
		if apierrors.IsConflict(err) {
			cur = nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("in-place update pod %s/%s to %s: %w", pod.Namespace, pod.Name, req.Revision, err)
	}
	return out, nil
}

// startConditions returns the pod's conditions with InPlaceUpdateReady=False
// and Ready recomputed, or nil when the pod has no gate or already shows it.
func (c *Control) startConditions(pod *corev1.Pod) []corev1.PodCondition {
	if !inplace.HasReadinessGate(pod) {
		return nil
	}
	now := c.Clock.Now()
	conds, changed := inplace.StartConditions(pod, now)
	if !changed {
		return nil
	}
	_, conds = podreadiness.RecomputeReady(pod, conds, now)
	return conds
}

// dryRun sends the pod write next of req as a dry run (admission runs,
// nothing is stored). With a grace period the containers change later, in
// Refresh: that write, the one admission would refuse, is asked about.
func (c *Control) dryRun(ctx context.Context, pod, next *corev1.Pod, req UpdateRequest) error {
	if req.GracePeriodSeconds > 0 {
		req.GracePeriodSeconds = 0
		var err error
		if next, err = c.updatedPod(pod, req); err != nil {
			return err
		}
	}
	err := c.Pods.DryRunPatch(ctx, pod, next)
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("the API server refuses the pod write (dry run; the pod is left in service): %w", err)
	}
	return err
}

// updatedPod is pod after the metadata, state and first batch of req.
func (c *Control) updatedPod(pod *corev1.Pod, req UpdateRequest) (*corev1.Pod, error) {
	now := c.Clock.Now()
	var next *corev1.Pod
	if req.GracePeriodSeconds > 0 {
		state := inplace.NewState(req.Revision, req.Spec, now)
		v, err := inplace.EncodeState(&state)
		if err != nil {
			return nil, err
		}
		g, err := inplace.EncodeGrace(inplace.GraceSpec{Revision: req.Revision, Spec: req.Spec, GraceSeconds: req.GracePeriodSeconds})
		if err != nil {
			return nil, err
		}
		next = pod.DeepCopy()
		setAnnotation(next, pub.InPlaceUpdateStateKey, v)
		setAnnotation(next, pub.InPlaceUpdateGraceKey, g)
	} else {
		state, batch := inplace.Start(pod, req.Revision, req.Spec, now)
		var err error
		if next, err = inplace.ApplyToPod(pod, batch, &state); err != nil {
			return nil, err
		}
	}
	for k, v := range req.Labels {
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[k] = v
	}
	for k, v := range req.Annotations {
		setAnnotation(next, k, v)
	}
	if req.Mutate != nil {
		req.Mutate(next)
	}
	return next, nil
}

func setAnnotation(pod *corev1.Pod, k, v string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[k] = v
}

// RefreshResult says what Refresh did.
type RefreshResult struct {
	// Pod is the pod as last written, or the pod given when nothing was.
	Pod *corev1.Pod
	// Written is true when Refresh wrote the pod or its status.
	Written bool
	// RequeueAfter > 0: a grace period is running; refresh again after it.
	RequeueAfter time.Duration
}

// Refresh advances an in-place update already started on pod, one step per
// call, and is meant to run on every pod at every sync:
//   - a grace period that has elapsed: the parked spec is applied (dropped
//     instead when it was parked for another revision than the one the pod
//     is labelled with — the pod's own controller-revision-hash, never the
//     workload's current target: the label already names the parked
//     revision, so dropping the spec because the target moved on would
//     leave a pod labelled with a revision whose images it never got);
//   - a finished batch whose containers are Ready: the next batch is applied;
//   - no update in flight (MarkReady: a finished update, or a gate left
//     False by an update whose pod write never landed):
//     InPlaceUpdateReady=True and Ready recomputed. The write carries the
//     pod's resourceVersion and is not retried on conflict: it holds only
//     for the version judged.
func (c *Control) Refresh(ctx context.Context, pod *corev1.Pod) (RefreshResult, error) {
	now := c.Clock.Now()
	state, err := inplace.DecodeState(pod)
	if err != nil {
		return RefreshResult{Pod: pod}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if raw, ok := pub.GetInPlaceUpdateGrace(pod); ok {
		return c.finishGrace(ctx, pod, state, raw, now)
	}
	if state != nil {
		if st, batch, ok := inplace.NextBatch(pod, state, now); ok {
			next, err := inplace.ApplyToPod(pod, batch, &st)
			if err != nil {
				return RefreshResult{Pod: pod}, err
			}
			return c.writePod(ctx, pod, next)
		}
	}
	if !inplace.MarkReady(pod, state) {
		return RefreshResult{Pod: pod}, nil
	}
	conds, changed := inplace.CompletedConditions(pod, now)
	if !changed {
		return RefreshResult{Pod: pod}, nil
	}
	_, conds = podreadiness.RecomputeReady(pod, conds, now)
	cp := pod.DeepCopy()
	cp.Status.Conditions = conds
	out, err := c.Pods.PatchStatus(ctx, pod, cp)
	if err != nil {
		return RefreshResult{Pod: pod}, fmt.Errorf("mark pod %s/%s InPlaceUpdateReady: %w", pod.Namespace, pod.Name, err)
	}
	if state == nil {
		klog.FromContext(ctx).Info("InPlaceUpdateReady was False with no in-place update in flight; set it True again",
			"pod", klog.KObj(pod), "reason", inplace.Condition(pod).Reason)
	}
	return RefreshResult{Pod: out, Written: true}, nil
}

func (c *Control) finishGrace(ctx context.Context, pod *corev1.Pod, state *pub.InPlaceUpdateState, raw string, now time.Time) (RefreshResult, error) {
	g, err := inplace.DecodeGrace(raw)
	if err != nil || state == nil || !revision.HashMatches(pod.Labels[pub.ControllerRevisionHashLabelKey], g.Revision) {
		// Unreadable, or parked for a revision that is no longer wanted: drop
		// it; the workload's update step will start afresh.
		cp := pod.DeepCopy()
		delete(cp.Annotations, pub.InPlaceUpdateGraceKey)
		return c.writePod(ctx, pod, cp)
	}
	if d := inplace.GraceRemaining(state, g.GraceSeconds, now); d > 0 {
		return RefreshResult{Pod: pod, RequeueAfter: d}, nil
	}
	st, batch := inplace.PlanBatch(pod, state, g.Spec, now)
	next, err := inplace.ApplyToPod(pod, batch, &st)
	if err != nil {
		return RefreshResult{Pod: pod}, err
	}
	return c.writePod(ctx, pod, next)
}

func (c *Control) writePod(ctx context.Context, pod, next *corev1.Pod) (RefreshResult, error) {
	out, err := c.Pods.Patch(ctx, pod, next)
	if err != nil {
		return RefreshResult{Pod: next}, fmt.Errorf("update pod %s/%s in place: %w", next.Namespace, next.Name, err)
	}
	return RefreshResult{Pod: out, Written: true}, nil
}
