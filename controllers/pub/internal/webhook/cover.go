package webhook

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/pub/internal/pubcontrol"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

// budgetOf returns the budget that guards pod, nil when none does. The
// related-pub annotation the controller writes names it; it is trusted when
// that budget exists, is not being deleted and — for a selector, which is
// cheap to check — still selects the pod. Otherwise (a budget deleted and
// recreated under another name, a relabelled pod, an annotation copied
// into a pod template) the namespace's budgets are searched for one that
// covers the pod, so that the protection holds at once, before the
// controller re-marks the pod; allowing would let every such pod go
// unguarded while the new budget's status looks healthy.
func (g *Guard) budgetOf(ctx context.Context, pod *corev1.Pod) (*policyv1alpha1.PodUnavailableBudget, error) {
	name := pubcontrol.RelatedPub(pod)
	if name == "" {
		return nil, nil
	}
	p, err := g.Pubs.PodUnavailableBudgets(pod.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("get pub %s/%s: %w", pod.Namespace, name, err)
	case p.DeletionTimestamp == nil && (p.Spec.Selector == nil || controller.SelectorMatches(p.Spec.Selector, pod.Labels)):
		return p, nil
	}
	pubs, err := g.Pubs.PodUnavailableBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pubs of %s: %w", pod.Namespace, err)
	}
	// The oldest first, as the budget validation names the oldest of
	// overlapping budgets.
	sort.Slice(pubs, func(i, j int) bool {
		a, b := pubs[i], pubs[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, q := range pubs {
		if q.DeletionTimestamp != nil || q.Name == name {
			continue
		}
		ok, err := g.covers(ctx, q, pod)
		if err != nil {
			return nil, err
		}
		if ok {
			klog.FromContext(ctx).V(2).Info("Pod is marked for a budget that does not protect it: guarded by the budget covering it",
				"pod", klog.KObj(pod), "marked", name, "pub", q.Name)
			return q, nil
		}
	}
	return nil, nil
}

// covers: q's selector selects the pod, or q's targetRef names the pod's
// controller (through a ReplicaSet for a Deployment), or — for a workload
// whose pods carry no owner reference to it — its /scale selector selects
// an ownerless pod. Only reached for pods whose mark is stale.
func (g *Guard) covers(ctx context.Context, q *policyv1alpha1.PodUnavailableBudget, pod *corev1.Pod) (bool, error) {
	t := q.Spec.TargetReference
	if t == nil {
		return controller.SelectorMatches(q.Spec.Selector, pod.Labels), nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if g.Finder == nil {
		return ref != nil && sameGroup(ref.APIVersion, t.APIVersion) && ref.Kind == t.Kind && ref.Name == t.Name, nil
	}
	w, err := g.Finder.Get(ctx, t.APIVersion, t.Kind, pod.Namespace, t.Name)
	if err != nil || w == nil || w.Terminating || w.Replicas == 0 {
		return false, err
	}
	switch {
	case ref == nil:
		return w.Selector.Matches(labels.Set(pod.Labels)), nil
	case ref.UID == w.UID:
		return true, nil
	case ref.Kind != "ReplicaSet":
		return false, nil
	}
	top, err := g.Finder.TopLevel(ctx, ref, pod.Namespace)
	return top != nil && top.UID == w.UID, err
}

func sameGroup(a, b string) bool {
	ga, err1 := schema.ParseGroupVersion(a)
	gb, err2 := schema.ParseGroupVersion(b)
	return err1 == nil && err2 == nil && ga.Group == gb.Group
}
