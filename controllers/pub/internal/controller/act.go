package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
)

// The pod writes: the related-pub annotation (through kit/podcontrol).
// The status write is in status.go.

// markRelated writes the related-pub annotation (both keys, as OpenKruise
// HEAD does) on the budget's pods that are unmarked or marked for a budget
// that no longer protects them — one that does not exist (deleted, or
// recreated under another name), is being deleted, or does not cover the
// pod (relabelled, moved to another workload, or an annotation copied into
// a pod template) — so that the pod webhook's match conditions send their
// deletes and updates to the guard, and the guard takes from this budget.
// A pod marked for another budget that also covers it keeps its mark: one
// budget guards a pod, the first to mark it.
func (c *Controller) markRelated(ctx context.Context, p *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		pub.PodRelatedPubAnnotationNew, p.Name, pub.PodRelatedPubAnnotation, p.Name)
	others := map[string]map[types.UID]bool{}
	n, remarked := 0, 0
	for _, pod := range pods {
		name := pubcontrol.RelatedPub(pod)
		if name == p.Name {
			continue
		}
		if name != "" {
			covered, err := c.otherCovers(ctx, pod.Namespace, name, pod.UID, others)
			if err != nil {
				return err
			}
			if covered {
				continue
			}
			remarked++
		}
		_, err := c.podControl.PatchBytes(ctx, pod, types.StrategicMergePatchType, patch)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("mark pod %s/%s related to pub %s: %w", pod.Namespace, pod.Name, p.Name, err)
		}
		n++
	}
	if n > 0 {
		klog.FromContext(ctx).V(2).Info("Marked pods with the related-pub annotation", "pub", klog.KObj(p), "pods", n, "remarked", remarked)
	}
	return nil
}

// otherCovers reports whether the budget name, which a pod of another
// budget is marked for, exists, is not being deleted and protects the pod
// (uid). The pod sets of such budgets are computed once per sync (memo):
// in the steady state no pod is marked for another budget and this costs
// nothing.
func (c *Controller) otherCovers(ctx context.Context, ns, name string, uid types.UID, memo map[string]map[types.UID]bool) (bool, error) {
	set, ok := memo[name]
	if !ok {
		q, err := c.pubs.PodUnavailableBudgets(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("get pub %s/%s: %w", ns, name, err)
		case q.DeletionTimestamp == nil:
			pods, _, err := c.podsFor(ctx, q)
			if err != nil {
				return false, err
			}
			set = make(map[types.UID]bool, len(pods))
			for _, pod := range pods {
				set[pod.UID] = true
			}
		}
		memo[name] = set
	}
	return set[uid], nil
}
