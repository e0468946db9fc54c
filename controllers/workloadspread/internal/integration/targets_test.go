package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// The target kinds beyond Deployment and CloneSet: an apps/v1 ReplicaSet
// and a batch/v1 Job run by kube-controller-manager, an Advanced
// StatefulSet whose pods the test creates as its controller would. Each
// spreads over a limited subset on zone-0 and an elastic one on zone-1.

// A ReplicaSet of 5 over a (zone-0, at most 2) and b (zone-1): 2/3, each
// pod's affinity and node in its subset's zone, the status counts them and
// the deletion costs (a ReplicaSet honours them) rank b first.
func TestReplicaSetTarget(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.spreads.Create(newSpread("ws", "apps/v1", "ReplicaSet", "rs", subset("a", "zone-0", "2"), subset("b", "zone-1", "")))
	h.waitInScope("ws")
	_, err := h.Env.Kube.AppsV1().ReplicaSets(h.NS).Create(context.Background(), &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(5)), Selector: lab.Selector("rs"), Template: lab.Template("rs", image)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=rs") }, "5 pods, running", func(ps []corev1.Pod) bool { return len(ps) == 5 && lab.RunningReady(ps) })
	assert.Equal(t, map[string]int{"a": 2, "b": 3}, h.checkPlaced("ws", pods, map[string]string{"a": "zone-0", "b": "zone-1"}))
	h.waitCounts("ws", map[string]int32{"a": 2, "b": 3}, map[string]int32{"a": 0, "b": -1})
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=rs") }, "deletion costs: a 200, b 100", costsBySubset(map[string]string{"a": "200", "b": "100"}))
}

// A Job counts its parallelism as its replicas (OpenKruise does the same):
// parallelism 4 of 8 completions, a at most 50% (2: of 8 it would be 4, all
// of them) on zone-0, b on zone-1. The Job starts suspended until the
// status has a's limit, so the webhook never decides on a stale one. Jobs
// do not honour deletion costs: none is written.
func TestJobTarget(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.spreads.Create(newSpread("ws", "batch/v1", "Job", "jb", subset("a", "zone-0", "50%"), subset("b", "zone-1", "")))
	h.waitInScope("ws")
	tmpl := lab.Template("jb", image)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	tmpl.Annotations = map[string]string{"sim.kwok.x-k8s.io/complete": "Never"} // kwok keeps the Job's pods running
	jobs := h.Env.Kube.BatchV1().Jobs(h.NS)
	_, err := jobs.Create(context.Background(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "jb"}, Spec: batchv1.JobSpec{
		Parallelism: ptr.To(int32(4)), Completions: ptr.To(int32(8)), Suspend: ptr.To(true), Template: tmpl}}, metav1.CreateOptions{})
	require.NoError(t, err)
	h.spreads.WaitFor("ws", "a: missing 2 (50% of parallelism 4)", func(w *appsv1alpha1.WorkloadSpread) bool {
		a := subsetStatus(w, "a")
		return a != nil && a.MissingReplicas == 2
	})
	_, err = jobs.Patch(context.Background(), "jb", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=jb") }, "4 pods, running", func(ps []corev1.Pod) bool { return len(ps) == 4 && lab.RunningReady(ps) })
	assert.Equal(t, map[string]int{"a": 2, "b": 2}, h.checkPlaced("ws", pods, map[string]string{"a": "zone-0", "b": "zone-1"}))
	h.waitCounts("ws", map[string]int32{"a": 2, "b": 2}, map[string]int32{"a": 0, "b": -1})
	for _, p := range h.Pods("app=jb") {
		assert.NotContains(t, p.Annotations, spread.DeletionCostKey, "pod %s of a Job", p.Name)
	}
}

// An Advanced StatefulSet's pods are placed by ordinal, not by arrival:
// created in reverse order (3, 2, 1, 0), ordinals 0 and 1 still fill a (at
// most 2), 2 and 3 go to b; the status counts them (no creatingPods: no
// status write at admission) and no deletion cost is written.
func TestAdvancedStatefulSetTarget(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1beta1", "StatefulSet", "sts", subset("a", "zone-0", "2"), subset("b", "zone-1", "")))
	h.waitInScope("ws")
	sts, err := h.Client.AppsV1beta1().StatefulSets(h.NS).Create(context.Background(), &appsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "sts"},
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To(int32(4)), ServiceName: "sts", Selector: lab.Selector("sts"), Template: lab.Template("sts", image)}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	for i := 3; i >= 0; i-- {
		name := fmt.Sprintf("sts-%d", i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "sts", appsv1.StatefulSetPodNameLabel: name,
				appsv1.PodIndexLabel: fmt.Sprint(i)},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}, TerminationGracePeriodSeconds: ptr.To(int64(0))},
		}
		created, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[bool]string{true: "a", false: "b"}[i < 2], subsetOf(created), "pod %s", name)
	}
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=sts") }, "4 pods, running", func(ps []corev1.Pod) bool { return len(ps) == 4 && lab.RunningReady(ps) })
	assert.Equal(t, map[string]int{"a": 2, "b": 2}, h.checkPlaced("ws", pods, map[string]string{"a": "zone-0", "b": "zone-1"}))
	w := h.waitCounts("ws", map[string]int32{"a": 2, "b": 2}, map[string]int32{"a": 0, "b": -1})
	assert.Empty(t, subsetStatus(w, "a").CreatingPods, "ordinal placement writes no creatingPods")
	for _, p := range h.Pods("app=sts") {
		assert.NotContains(t, p.Annotations, spread.DeletionCostKey, "pod %s of a StatefulSet", p.Name)
	}
}

// checkPlaced asserts that each pod carries ws's annotation and its
// subset's zone both as a required node affinity term and as the zone of
// the node it runs on; it returns the count per subset ("" unplaced).
func (h *harness) checkPlaced(ws string, pods []corev1.Pod, zones map[string]string) map[string]int {
	h.T.Helper()
	count := map[string]int{}
	for _, p := range pods {
		s := subsetOf(&p)
		count[s]++
		if s == "" {
			continue
		}
		assert.Equal(h.T, ws, spread.InjectedOf(&p).Name, "pod %s: annotation", p.Name)
		assert.Equal(h.T, zones[s], requiredZone(&p), "pod %s: required affinity of subset %s", p.Name, s)
		node, err := h.Env.Kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(h.T, err)
		assert.Equal(h.T, zones[s], node.Labels[corev1.LabelTopologyZone], "pod %s runs in its subset's zone", p.Name)
	}
	return count
}

// requiredZone is the zone a pod's required node affinity asks for ("" none).
func requiredZone(p *corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelTopologyZone && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// waitCounts waits until ws's subsets have these replicas and
// missingReplicas and no creatingPods entry left, and returns it.
func (h *harness) waitCounts(ws string, replicas, missing map[string]int32) *appsv1alpha1.WorkloadSpread {
	h.T.Helper()
	return h.spreads.WaitFor(ws, fmt.Sprintf("replicas %v, missing %v, no creatingPods", replicas, missing), func(w *appsv1alpha1.WorkloadSpread) bool {
		for name, r := range replicas {
			s := subsetStatus(w, name)
			if s == nil || s.Replicas != r || s.MissingReplicas != missing[name] || len(s.CreatingPods) != 0 {
				return false
			}
		}
		return true
	})
}

// costsBySubset holds when every pod carries the deletion cost of its
// subset (key "" for pods in none).
func costsBySubset(want map[string]string) func([]corev1.Pod) bool {
	return func(ps []corev1.Pod) bool {
		for _, p := range ps {
			if c, ok := p.Annotations[spread.DeletionCostKey]; !ok || c != want[subsetOf(&p)] {
				return false
			}
		}
		return len(ps) > 0
	}
}
