package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// A subset's preferredNodeSelectorTerms, tolerations and patch
// (annotations, container resources) land on the pod the API server
// stores, and only on its subset's pods: subset "dedicated" (at most 1)
// asks for this test's node, which carries a second taint only the
// subset's tolerations lift, so the pod runs there only if both were
// written; the second pod goes to "rest" (zone-0) without any of it.
func TestSubsetFieldsInjected(t *testing.T) {
	h := newHarness(t)
	h.start()
	taint := corev1.Taint{Key: "flotilla.dev/dedicated", Value: "spread", Effect: corev1.TaintEffectNoSchedule}
	nodes := h.Env.KwokNodes(t, h.NS, 1, nil, taint)
	cs := h.cloneSet("f", 2)

	dedicated := appsv1alpha1.WorkloadSpreadSubset{Name: "dedicated", MaxReplicas: ptrIntStr(1),
		RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: testenv.TestNodeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{h.NS}}}},
		PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{{Weight: 50, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}},
		Tolerations: []corev1.Toleration{testenv.TestNodeToleration(),
			{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}},
		Patch: runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"flotilla.dev/subset-note":"dedicated"}},` +
			`"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"250m","memory":"64Mi"},"limits":{"cpu":"500m"}}}]}}`)},
	}
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "f", dedicated, subset("rest", "zone-0", "")))
	h.waitInScope("ws")

	ctx := context.Background()
	var created []*corev1.Pod
	for _, name := range []string{"f-0", "f-1"} {
		p := ownedPod(cs, name)
		p.Annotations = map[string]string{"own": "kept"}
		out, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		created = append(created, out)
	}
	first, second := created[0], created[1]
	require.Equal(t, "dedicated", subsetOf(first))
	require.Equal(t, "rest", subsetOf(second))

	na := first.Spec.Affinity.NodeAffinity
	assert.Equal(t, dedicated.PreferredNodeSelectorTerms, na.PreferredDuringSchedulingIgnoredDuringExecution, "preferred terms")
	assert.Equal(t, []corev1.NodeSelectorTerm{*dedicated.RequiredNodeSelectorTerm}, na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, "required term")
	assert.Subset(t, first.Spec.Tolerations, dedicated.Tolerations, "the subset's tolerations")
	assert.Equal(t, "dedicated", first.Annotations["flotilla.dev/subset-note"], "patched annotation")
	assert.Equal(t, "kept", first.Annotations["own"], "the pod's own annotation")
	ctr := first.Spec.Containers[0]
	assert.Equal(t, image, ctr.Image, "the patch merges the container by name")
	assert.True(t, resource.MustParse("250m").Equal(ctr.Resources.Requests[corev1.ResourceCPU]), "cpu request %v", ctr.Resources.Requests)
	assert.True(t, resource.MustParse("64Mi").Equal(ctr.Resources.Requests[corev1.ResourceMemory]), "memory request %v", ctr.Resources.Requests)
	assert.True(t, resource.MustParse("500m").Equal(ctr.Resources.Limits[corev1.ResourceCPU]), "cpu limit %v", ctr.Resources.Limits)

	assert.Empty(t, second.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "rest: no preferred terms")
	for _, tol := range second.Spec.Tolerations {
		assert.NotEqual(t, taint.Key, tol.Key, "rest: not the dedicated toleration")
		assert.NotEqual(t, testenv.TestNodeTaint, tol.Key, "rest: not the dedicated toleration")
	}
	assert.NotContains(t, second.Annotations, "flotilla.dev/subset-note")
	assert.Empty(t, second.Spec.Containers[0].Resources.Requests, "rest: no patched resources")
	assert.Equal(t, "zone-0", requiredZone(second))

	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=f") }, "2 pods running", func(ps []corev1.Pod) bool { return len(ps) == 2 && lab.RunningReady(ps) })
	assert.Equal(t, nodes[0], pods[0].Spec.NodeName, "f-0 runs on the tainted node its subset tolerates")
	assert.NotEqual(t, nodes[0], pods[1].Spec.NodeName)
}

// Scale-in order of a CloneSet through pod-deletion-cost (the CloneSet
// controller honours it; it does not run here, the costs are what the
// test checks): fixed (zone-0, at most 2) then elastic (zone-1): fixed's
// pods 200, elastic's 100 — the elastic subset is emptied first — and a pod
// of the CloneSet in no subset (created before the WorkloadSpread) -300,
// deleted before all. With fixed's limit lowered to 1, the pod beyond it
// goes to -100: deleted before the elastic ones, the other stays 200.
func TestCloneSetDeletionCosts(t *testing.T) {
	h := newHarness(t)
	h.start()
	cs := h.cloneSet("dc", 6)
	ctx := context.Background()
	pods := h.Env.Kube.CoreV1().Pods(h.NS)
	_, err := pods.Create(ctx, ownedPod(cs, "dc-stray"), metav1.CreateOptions{})
	require.NoError(t, err)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "dc", subset("fixed", "zone-0", "2"), subset("elastic", "zone-1", "")))
	h.waitInScope("ws")
	for i := range 5 {
		p, err := pods.Create(ctx, ownedPod(cs, fmt.Sprintf("dc-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[bool]string{true: "fixed", false: "elastic"}[i < 2], subsetOf(p), "pod %s", p.Name)
	}
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=dc") }, "costs: fixed 200, elastic 100, none -300",
		costsBySubset(map[string]string{"fixed": "200", "elastic": "100", "": "-300"}))

	h.spreads.Modify("ws", func(w *appsv1alpha1.WorkloadSpread) { w.Spec.Subsets[0].MaxReplicas = ptrIntStr(1) })
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=dc") }, "fixed over its limit of 1: one pod -100, one 200", func(ps []corev1.Pod) bool {
		costs := map[string]map[string]int{}
		for _, p := range ps {
			s := subsetOf(&p)
			if costs[s] == nil {
				costs[s] = map[string]int{}
			}
			costs[s][p.Annotations[spread.DeletionCostKey]]++
		}
		return assert.ObjectsAreEqual(map[string]map[string]int{"fixed": {"-100": 1, "200": 1}, "elastic": {"100": 3}, "": {"-300": 1}}, costs)
	})
}

func ptrIntStr(n int) *intstr.IntOrString {
	v := intstr.FromInt32(int32(n))
	return &v
}
