package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// sync gathers the budget's pods and expected count, marks unmarked pods,
// and writes the status if it changed; it requeues itself at the earliest
// expiry of a recorded pod.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	p, found, err := controller.Lookup("pub", key, c.pubs.PodUnavailableBudgets(key.Namespace).Get)
	if !found || p.DeletionTimestamp != nil {
		return err
	}
	pods, expected, err := c.podsFor(ctx, p)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		c.Recorder.Eventf(p, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	if err := c.markRelated(ctx, p, pods); err != nil {
		return err
	}
	recheck, err := c.updateStatus(ctx, p, pods, expected)
	if err != nil {
		return err
	}
	if recheck > 0 {
		c.Queue.AddAfter(key, recheck)
	}
	return nil
}

// podsFor returns the active pods the budget protects and the expected
// replica count (annotation pub.kruise.io/protect-total-replicas wins).
func (c *Controller) podsFor(ctx context.Context, p *policyv1alpha1.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	var pods []*corev1.Pod
	var expected int32
	var err error
	switch {
	case p.Spec.TargetReference != nil:
		pods, expected, err = c.podsForRef(ctx, p.Namespace, p.Spec.TargetReference)
	case p.Spec.Selector != nil:
		pods, expected, err = c.podsForSelector(ctx, p.Namespace, p.Spec.Selector)
	}
	if err != nil {
		return nil, 0, err
	}
	if n, ok := pubcontrol.ProtectTotalReplicas(p); ok {
		expected = n
	}
	return pods, expected, nil
}

// podsForRef: the workload's pods are those it controls, or controls
// through a ReplicaSet (Deployment); a workload whose pods carry no
// owner reference to it falls back to its /scale selector, as OpenKruise
// does for custom workloads.
func (c *Controller) podsForRef(ctx context.Context, ns string, ref *policyv1alpha1.TargetReference) ([]*corev1.Pod, int32, error) {
	w, err := c.finder.Get(ctx, ref.APIVersion, ref.Kind, ns, ref.Name)
	if err != nil {
		return nil, 0, err
	}
	if w == nil || w.Terminating || w.Replicas == 0 {
		return nil, 0, nil
	}
	objs, err := controller.ByOwnerUID(c.pods, w.UID)
	if err != nil {
		return nil, 0, fmt.Errorf("pods of %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	pods := activePods(objs)
	if len(pods) > 0 || w.Selector.Empty() {
		return pods, w.Replicas, nil
	}
	// A Deployment's pods are those of its ReplicaSets; a workload whose
	// pods carry no owner reference at all gets every pod its selector
	// matches.
	owners := map[types.UID]bool{}
	var all []*corev1.Pod
	for _, pod := range c.listPods(ns, w.Selector) {
		all = append(all, pod)
		r := metav1.GetControllerOfNoCopy(pod)
		if r == nil || r.Kind != "ReplicaSet" {
			continue
		}
		mine, seen := owners[r.UID]
		if !seen {
			top, err := c.finder.TopLevel(ctx, r, ns)
			if err != nil {
				return nil, 0, err
			}
			mine = top != nil && top.UID == w.UID
			owners[r.UID] = mine
		}
		if mine {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		pods = all
	}
	return pods, w.Replicas, nil
}

// podsForSelector: the expected count is the sum of the replicas of the
// distinct workloads controlling the pods (pods without a controller add
// nothing: use pub.kruise.io/protect-total-replicas for them).
func (c *Controller) podsForSelector(ctx context.Context, ns string, ls *metav1.LabelSelector) ([]*corev1.Pod, int32, error) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return nil, 0, nil // schema forbids both; match nothing rather than everything
	}
	pods := c.listPods(ns, sel)
	seen := map[types.UID]bool{}
	workloads := map[types.UID]int32{}
	for _, pod := range pods {
		r := metav1.GetControllerOfNoCopy(pod)
		if r == nil || seen[r.UID] {
			continue
		}
		seen[r.UID] = true
		w, err := c.finder.TopLevel(ctx, r, ns)
		if err != nil {
			return nil, 0, err
		}
		if w != nil && !w.Terminating {
			workloads[w.UID] = w.Replicas
		}
	}
	return pods, sum(workloads), nil
}

func sum(m map[types.UID]int32) int32 {
	var n int32
	for _, v := range m {
		n += v
	}
	return n
}

func (c *Controller) listPods(ns string, sel labels.Selector) []*corev1.Pod {
	objs, _ := c.pods.ByIndex(cache.NamespaceIndex, ns)
	var out []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && podutil.IsActive(pod) && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out
}

func activePods(objs []any) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && podutil.IsActive(pod) {
			out = append(out, pod)
		}
	}
	return out
}
