package nodeplacement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// TestVerdictRunningPods: what a running pod may keep that a new pod may not get (the DaemonSet's
// shouldContinueRunning), and that without ResourceFit requests are not looked at.
func TestVerdictRunningPods(t *testing.T) {
	noSchedule := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}
	tolerateNoExecute := []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	cordoned := node("n", nil)
	cordoned.Spec.Unschedulable = true
	cases := []struct {
		name           string
		spec           corev1.PodSpec
		opts           Options
		node           *corev1.Node
		run, continue_ bool
	}{
		{name: "eligible", node: node("n", nil), run: true, continue_: true},
		{name: "NoSchedule keeps new pods out, running ones stay", node: node("n", nil, noSchedule), continue_: true},
		{name: "NoExecute evicts", node: node("n", nil, noExecute)},
		{name: "NoExecute tolerated, NoSchedule not: stay", spec: corev1.PodSpec{Tolerations: tolerateNoExecute}, node: node("n", nil, noSchedule, noExecute), continue_: true},
		{name: "cordon keeps new pods out", node: cordoned, continue_: true},
		{name: "label mismatch evicts", spec: corev1.PodSpec{NodeSelector: map[string]string{"a": "b"}}, node: node("n", nil)},
		{name: "requests ignored without ResourceFit", spec: requesting("cpu", "100"), node: node("n", nil), run: true, continue_: true},
		{name: "requests too big with ResourceFit: stay", spec: requesting("cpu", "100"), opts: Options{ResourceFit: true}, node: node("n", nil), continue_: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := New(klog.Background(), &tc.spec, tc.opts).Verdict(tc.node)
			assert.Equal(t, tc.run, v.ShouldRun, v.Reason)
			assert.Equal(t, tc.continue_, v.ShouldContinueRunning, v.Reason)
			assert.Equal(t, tc.run, v.Reason == "", "a reason exactly when the pod should not run")
		})
	}
}

func TestPinToNodeAndTargetNode(t *testing.T) {
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	other := corev1.NodeSelectorRequirement{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}
	a := PinToNode(requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{other}},
		corev1.NodeSelectorTerm{}), "n1")
	pin := corev1.NodeSelectorRequirement{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	assert.Equal(t, []corev1.NodeSelectorRequirement{pin}, terms[0].MatchFields, "the user's own metadata.name field is replaced")
	assert.Equal(t, []corev1.NodeSelectorRequirement{zone}, terms[0].MatchExpressions, "the user's expressions stay")
	assert.Equal(t, []corev1.NodeSelectorRequirement{pin}, terms[1].MatchFields, "every ORed term is pinned")
	assert.Equal(t, "n1", TargetNode(&corev1.Pod{Spec: corev1.PodSpec{Affinity: PinToNode(nil, "n1")}}))
	assert.Equal(t, "bound", TargetNode(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "bound", Affinity: PinToNode(nil, "n1")}}), "binding wins")
	assert.Empty(t, TargetNode(&corev1.Pod{}))
}

func TestEligibilityChanged(t *testing.T) {
	base := node("n", map[string]string{"a": "1"})
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	heartbeat.ResourceVersion = "2"
	relabelled := base.DeepCopy()
	relabelled.Labels["a"] = "2"
	tainted := base.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	shrunk := withAllocatable(base.DeepCopy(), corev1.ResourceCPU, "1")
	assert.False(t, EligibilityChanged(base, heartbeat, Options{}))
	assert.True(t, EligibilityChanged(base, relabelled, Options{}))
	assert.True(t, EligibilityChanged(base, tainted, Options{}))
	assert.False(t, EligibilityChanged(base, shrunk, Options{}), "allocatable is not read without ResourceFit")
	assert.True(t, EligibilityChanged(base, shrunk, Options{ResourceFit: true}))
}
