package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
	policylisters "github.com/flotilla-dev/flotilla/client/listers/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/wiring"
)

func handlerFixture(t *testing.T, pubs ...*policyv1alpha1.PodUnavailableBudget) *Controller {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pubs {
		assert.NoError(t, idx.Add(p))
	}
	o := controller.DefaultQueueOptions()
	o.DisableInitialDelay = true
	return &Controller{pubs: policylisters.NewPodUnavailableBudgetLister(idx),
		Core: wiring.Core[types.NamespacedName]{Reconciler: controller.NewReconciler[types.NamespacedName]("test", o, controller.QueueConfig{}, nil)}}
}

func pod(ns, name string, labels, annotations map[string]string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations, ResourceVersion: "1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func drain(c *Controller) []string {
	var out []string
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		out = append(out, k.String())
		c.Queue.Done(k)
	}
	return out
}

// Behaviour §2.8 (docs/openkruise-behaviour.md): pods unrelated to any budget cost a lookup and enqueue
// nothing; marked pods enqueue their budget, on add and when their
// availability changes, not on other updates.
func TestPodHandlerEnqueuesOnlyRelatedPods(t *testing.T) {
	web := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	c := handlerFixture(t, web)
	h := podHandler{c}
	marked := map[string]string{pub.PodRelatedPubAnnotation: "web"}

	h.OnAdd(pod("b", "x", map[string]string{"app": "web"}, nil, true), false)
	h.OnAdd(pod("a", "y", map[string]string{"app": "db"}, nil, true), false)
	assert.Empty(t, drain(c), "namespace without budget / labels no budget selects")

	h.OnAdd(pod("a", "new", map[string]string{"app": "web"}, nil, true), false)
	assert.Equal(t, []string{"a/web"}, drain(c), "an unmarked pod the selector covers: to be marked")
	h.OnAdd(pod("a", "m", nil, marked, true), false)
	assert.Equal(t, []string{"a/web"}, drain(c), "marked: one map lookup")

	old := pod("a", "m", map[string]string{"app": "web"}, marked, true)
	relabelled := old.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels = "2", map[string]string{"app": "web", "x": "y"}
	h.OnUpdate(old, relabelled)
	assert.Empty(t, drain(c), "a marked pod's update that does not change availability")
	notReady := pod("a", "m", map[string]string{"app": "web"}, marked, false)
	notReady.ResourceVersion = "3"
	h.OnUpdate(old, notReady)
	assert.Equal(t, []string{"a/web"}, drain(c), "availability changed")

	unrelated := pod("a", "y", map[string]string{"app": "db"}, nil, true)
	unrelated2 := unrelated.DeepCopy()
	unrelated2.ResourceVersion = "2"
	unrelated2.Status.Conditions[0].Status = corev1.ConditionFalse
	h.OnUpdate(unrelated, unrelated2)
	h.OnDelete(unrelated2)
	assert.Empty(t, drain(c), "unrelated pods never enqueue")
}

func TestCovers(t *testing.T) {
	byRef := &policyv1alpha1.PodUnavailableBudget{Spec: policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"}}}
	rs := &metav1.OwnerReference{Kind: "ReplicaSet", Controller: ptr.To(true)}
	cs := &metav1.OwnerReference{Kind: "CloneSet", Controller: ptr.To(true)}
	p := pod("a", "p", nil, nil, true)
	assert.True(t, Covers(byRef, p, rs))
	assert.False(t, Covers(byRef, p, cs))
	assert.False(t, Covers(byRef, p, nil))
	empty := &policyv1alpha1.PodUnavailableBudget{Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{}}}
	assert.False(t, Covers(empty, p, nil), "an empty selector covers nothing")
}

// Issue 26 item 5: pods marked for a budget that is gone, or relabelled
// into another budget, are offered to the budgets that cover them; a
// deleted budget enqueues the others of its namespace (one of them may
// have to re-mark its pods).
func TestStaleMarksEnqueueCoveringBudgets(t *testing.T) {
	sel := func(name, app string) *policyv1alpha1.PodUnavailableBudget {
		return &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	c := handlerFixture(t, sel("web", "web"), sel("db", "db"))
	h := podHandler{c}

	h.OnAdd(pod("a", "p", map[string]string{"app": "web"}, map[string]string{pub.PodRelatedPubAnnotation: "gone"}, true), false)
	assert.Equal(t, []string{"a/web"}, drain(c), "marked for a budget that does not exist: the covering budget")

	old := pod("a", "p", map[string]string{"app": "db"}, map[string]string{pub.PodRelatedPubAnnotation: "db"}, true)
	moved := old.DeepCopy()
	moved.ResourceVersion, moved.Labels = "2", map[string]string{"app": "web"}
	h.OnUpdate(old, moved)
	assert.ElementsMatch(t, []string{"a/web", "a/db"}, drain(c), "relabelled: the budget now covering it, and its own recounts")

	stale := pod("a", "p", map[string]string{"app": "web"}, map[string]string{pub.PodRelatedPubAnnotation: "gone"}, true)
	notReady := pod("a", "p", map[string]string{"app": "web"}, map[string]string{pub.PodRelatedPubAnnotation: "gone"}, false)
	notReady.ResourceVersion = "2"
	h.OnUpdate(stale, notReady)
	assert.Empty(t, drain(c), "a stale mark is offered on add and on label changes, not on every update")

	ph := pubHandler{c}
	ph.OnDelete(sel("old", "web"))
	assert.ElementsMatch(t, []string{"a/old", "a/web", "a/db"}, drain(c), "a deleted budget: the others of its namespace")
	gone := metav1.Now()
	terminating := sel("db", "db")
	terminating.DeletionTimestamp = &gone
	ph.OnUpdate(sel("db", "db"), terminating)
	assert.ElementsMatch(t, []string{"a/db", "a/web"}, drain(c), "a budget starting to terminate: the others too")
	ph.OnUpdate(sel("db", "db"), sel("db", "db"))
	assert.Equal(t, []string{"a/db"}, drain(c), "an update: the budget only")
}
