package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/apis/testing/seeds"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// The seed v0.10 §1 example (002#17, its pseudo-syntax resolved: a
// Deployment, subset-a at most 30% in zone-a, subset-b in zone-b) applied
// unchanged: 10 replicas split 3/7; scaled to 6 through /scale, the
// elastic subset-b is emptied first.
func TestSeedExample(t *testing.T) {
	h := newHarness(t)
	h.start()
	var ws appsv1alpha1.WorkloadSpread
	require.NoError(t, yaml.UnmarshalStrict([]byte(seeds.Repaired["002#17-repaired"]), &ws))
	h.Env.KwokNodes(t, h.NS, 1, map[string]string{corev1.LabelTopologyZone: "zone-a"})
	h.Env.KwokNodes(t, h.NS, 1, map[string]string{corev1.LabelTopologyZone: "zone-b"})
	h.spreads.Create(&ws)
	h.waitInScope(ws.Name)

	// The workload's pods run on this test's own zone-a/zone-b nodes only.
	tmpl := lab.Template("seed", image)
	tmpl.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
	tmpl.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
	ctx := context.Background()
	deploys := h.Env.Kube.AppsV1().Deployments(h.NS)
	_, err := deploys.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: ws.Spec.TargetReference.Name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(10)), Selector: lab.Selector("seed"), Template: tmpl}}, metav1.CreateOptions{})
	require.NoError(t, err)
	bySubset := func(ps []corev1.Pod) map[string]int {
		out := map[string]int{}
		for _, p := range ps {
			out[subsetOf(&p)]++
		}
		return out
	}
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods("app=seed") }, "10 pods running", func(ps []corev1.Pod) bool { return len(ps) == 10 && lab.RunningReady(ps) })
	assert.Equal(t, map[string]int{"subset-a": 3, "subset-b": 7}, bySubset(pods))
	h.spreads.WaitFor(ws.Name, "subset-a 3/missing 0, subset-b 7 and every pod's deletion cost written", func(w *appsv1alpha1.WorkloadSpread) bool {
		a, b := subsetStatus(w, "subset-a"), subsetStatus(w, "subset-b")
		return a != nil && b != nil && a.Replicas == 3 && a.MissingReplicas == 0 && b.Replicas == 7 && b.MissingReplicas == -1
	})
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=seed") }, "deletion costs written", func(ps []corev1.Pod) bool {
		for _, p := range ps {
			if p.Annotations["controller.kubernetes.io/pod-deletion-cost"] == "" {
				return false
			}
		}
		return true
	})

	_, err = deploys.UpdateScale(ctx, ws.Spec.TargetReference.Name, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: ws.Spec.TargetReference.Name, Namespace: h.NS},
		Spec: autoscalingv1.ScaleSpec{Replicas: 6}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	// 30% of 6 is 2. The elastic subset-b goes first: its pods have the lower cost; whether the one subset-a pod
	// beyond the new limit goes too depends on whether the reconciler re-costs it before the ReplicaSet controller
	// picks (both react to the same scale), so subset-a keeps 2 or 3, never fewer.
	h.WaitPods(func() []corev1.Pod { return h.Pods("app=seed") }, "6 pods, subset-a kept", func(ps []corev1.Pod) bool {
		c := bySubset(ps)
		return len(ps) == 6 && c["subset-a"] >= 2 && c["subset-a"]+c["subset-b"] == 6
	})
	h.spreads.WaitFor(ws.Name, "subset-a limit 2 of 6: missing 0", func(w *appsv1alpha1.WorkloadSpread) bool {
		a := subsetStatus(w, "subset-a")
		return a != nil && a.MissingReplicas == 0 && a.Replicas >= 2
	})
}

// The seed example's other variant (002#17 with `apps.kruise.io/v1alpha1`,
// `CloneSet`, `maxReplicas: 10`) applied unchanged: of 12 pods of the
// CloneSet (created by the test as its controller would; it does not run
// here), subset-a in zone-a takes 10, subset-b in zone-b the other 2; the
// status counts them and the deletion costs the CloneSet controller honours
// put subset-b's pods first in a scale-in.
func TestSeedExampleCloneSet(t *testing.T) {
	h := newHarness(t)
	h.start()
	var ws appsv1alpha1.WorkloadSpread
	require.NoError(t, yaml.UnmarshalStrict([]byte(seeds.Repaired["002#17-repaired-cloneset"]), &ws))
	require.Equal(t, "CloneSet", ws.Spec.TargetReference.Kind)
	h.Env.KwokNodes(t, h.NS, 1, map[string]string{corev1.LabelTopologyZone: "zone-a"})
	h.Env.KwokNodes(t, h.NS, 1, map[string]string{corev1.LabelTopologyZone: "zone-b"})
	cs := h.cloneSet(ws.Spec.TargetReference.Name, 12)
	h.spreads.Create(&ws)
	h.waitInScope(ws.Name)

	ctx := context.Background()
	for range 12 {
		p := ownedPod(cs, "") // generateName, as the CloneSet controller names its pods
		p.Spec.Tolerations = []corev1.Toleration{testenv.TestNodeToleration()}
		p.Spec.NodeSelector = map[string]string{testenv.TestNodeLabel: h.NS}
		_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	sel := "app=" + cs.Name
	pods := h.WaitPods(func() []corev1.Pod { return h.Pods(sel) }, "12 pods running", func(ps []corev1.Pod) bool { return len(ps) == 12 && lab.RunningReady(ps) })
	assert.Equal(t, map[string]int{"subset-a": 10, "subset-b": 2}, h.checkPlaced(ws.Name, pods, map[string]string{"subset-a": "zone-a", "subset-b": "zone-b"}))
	h.waitCounts(ws.Name, map[string]int32{"subset-a": 10, "subset-b": 2}, map[string]int32{"subset-a": 0, "subset-b": -1})
	h.WaitPods(func() []corev1.Pod { return h.Pods(sel) }, "deletion costs: subset-a 200, subset-b 100",
		costsBySubset(map[string]string{"subset-a": "200", "subset-b": "100"}))
}
