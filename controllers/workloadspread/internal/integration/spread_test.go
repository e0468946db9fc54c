package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// A Deployment spread over a fixed subset (zone-0, 2 pods, patched label)
// and an elastic one (zone-1): pods are placed and patched, the status
// counts them, deletion costs rank the elastic subset first, and a scale-in
// through /scale empties the elastic subset first.
func TestDeploymentSpreadAndScaleIn(t *testing.T) {
	h := newHarness(t)
	h.start()
	fixed := subset("fixed", "zone-0", "2")
	fixed.Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"subset":"fixed"}}}`)}
	h.spreads.Create(newSpread("ws", "apps/v1", "Deployment", "web", fixed, subset("elastic", "zone-1", "")))
	h.waitInScope("ws")

	ctx := context.Background()
	deploys := h.Env.Kube.AppsV1().Deployments(h.NS)
	_, err := deploys.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(5)), Selector: lab.Selector("web"), Template: lab.Template("web", image)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=web") }, "5 pods, running", func(ps []corev1.Pod) bool { return len(ps) == 5 && lab.RunningReady(ps) })
	count := map[string]int{}
	for _, p := range pods {
		count[subsetOf(&p)]++
		zone := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
		node, err := h.Env.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, zone, node.Labels[corev1.LabelTopologyZone], "pod %s runs in its subset's zone", p.Name)
		if subsetOf(&p) == "fixed" {
			assert.Equal(t, "fixed", p.Labels["subset"], "the subset's patch")
		}
	}
	assert.Equal(t, map[string]int{"fixed": 2, "elastic": 3}, count)
	h.spreads.WaitFor("ws", "fixed 2/missing 0, elastic 3/missing -1, no creating left", func(w *appsv1alpha1.WorkloadSpread) bool {
		f, e := subsetStatus(w, "fixed"), subsetStatus(w, "elastic")
		return f != nil && e != nil && f.Replicas == 2 && f.MissingReplicas == 0 && e.Replicas == 3 && e.MissingReplicas == -1 &&
			len(f.CreatingPods) == 0 && len(e.CreatingPods) == 0
	})
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=web") }, "deletion costs: fixed 200, elastic 100", func(ps []corev1.Pod) bool {
		for _, p := range ps {
			want := map[string]string{"fixed": "200", "elastic": "100"}[subsetOf(&p)]
			if p.Annotations[spread.DeletionCostKey] != want {
				return false
			}
		}
		return true
	})

	_, err = deploys.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: h.NS},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	pods = h.WaitPods(func() []corev1.Pod { return h.Pods("app=web") }, "2 pods", func(ps []corev1.Pod) bool { return len(ps) == 2 })
	for _, p := range pods {
		assert.Equal(t, "fixed", subsetOf(&p), "the elastic subset is emptied first")
	}
}

// 50 pods created at once against a subset of maxReplicas 10: exactly 10
// get it, the others the next subset.
func TestConcurrentCreatesNeverOverfill(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.cloneSet("burst", 50)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "burst", subset("ten", "zone-0", "10"), subset("rest", "zone-1", "")))
	h.waitInScope("ws")

	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		name := fmt.Sprintf("burst-%d", i)
		if i%2 == 1 {
			name = "" // generateName: recorded by a generated uid
		}
		wg.Go(func() {
			_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), ownedPod(cs, name), metav1.CreateOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	count := map[string]int{}
	for _, p := range h.Pods("app=burst") {
		count[subsetOf(&p)]++
	}
	assert.Equal(t, map[string]int{"ten": 10, "rest": 40}, count)
	h.spreads.WaitFor("ws", "ten: 10 replicas, missing 0", func(w *appsv1alpha1.WorkloadSpread) bool {
		s := subsetStatus(w, "ten")
		return s != nil && s.Replicas == 10 && s.MissingReplicas == 0 && len(s.CreatingPods) == 0
	})
}

// A percent maxReplicas follows the target's replicas changed through
// /scale.
func TestPercentFollowsScale(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.cloneSet("pct", 4)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "pct", subset("half", "zone-0", "50%"), subset("rest", "zone-1", "50%")))
	h.spreads.WaitFor("ws", "half: missing 2 of 4", func(w *appsv1alpha1.WorkloadSpread) bool {
		s := subsetStatus(w, "half")
		return s != nil && s.MissingReplicas == 2
	})
	_, err := h.Client.AppsV1alpha1().CloneSets(h.NS).UpdateScale(context.Background(), "pct", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "pct", Namespace: h.NS}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	h.spreads.WaitFor("ws", "half: missing 5 of 9 (rounded up)", func(w *appsv1alpha1.WorkloadSpread) bool {
		s := subsetStatus(w, "half")
		return s != nil && s.MissingReplicas == 5
	})
}

// Adaptive: pods a subset cannot place (no node has its label) are deleted
// after rescheduleCriticalSeconds, the subset is marked unschedulable, and
// the replacements go to the next subset.
func TestAdaptiveReschedule(t *testing.T) {
	h := newHarness(t)
	h.start()
	ws := newSpread("ws", "apps/v1", "Deployment", "ad", subset("nowhere", "zone-none", "3"), subset("zone1", "zone-1", ""))
	ws.Spec.ScheduleStrategy = appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To(int32(2))}}
	h.spreads.Create(ws)
	h.waitInScope("ws")
	_, err := h.Env.Kube.AppsV1().Deployments(h.NS).Create(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "ad"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: lab.Selector("ad"), Template: lab.Template("ad", image)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=ad") }, "2 pods running in zone1", func(ps []corev1.Pod) bool {
		if len(ps) != 2 || !lab.RunningReady(ps) {
			return false
		}
		for _, p := range ps {
			if subsetOf(&p) != "zone1" {
				return false
			}
		}
		return true
	})
	require.Len(t, pods, 2)
	w := h.spreads.Get("ws")
	c := spread.SubsetCondition(subsetStatus(w, "nowhere"), appsv1alpha1.SubsetSchedulable)
	require.NotNil(t, c)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
	assert.Equal(t, "PodUnschedulable", c.Reason)
}

// Pods of no WorkloadSpread never reach the webhook; the pods of the
// target do.
func TestScopeUnrelatedPodsNotCalled(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.cloneSet("target", 2)
	other := h.cloneSet("other", 2)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "target", subset("a", "zone-0", "")))
	h.waitInScope("ws")
	ctx := context.Background()
	for i := range 5 {
		_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, ownedPod(other, fmt.Sprintf("other-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
		p := ownedPod(other, fmt.Sprintf("bare-%d", i))
		p.OwnerReferences = nil
		_, err = h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	assert.Zero(t, h.wh.Requests("workloadspread-mutate-pod"), "unrelated pods: 0 webhook calls")
	created, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, ownedPod(cs, "target-0"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", subsetOf(created))
	assert.Equal(t, float64(1), h.wh.Requests("workloadspread-mutate-pod"))
	for i := range 5 {
		require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(ctx, fmt.Sprintf("bare-%d", i), metav1.DeleteOptions{}))
	}
	assert.Zero(t, h.wh.Requests("workloadspread-pod-deletion"), "deleting unplaced pods: 0 calls")
}
