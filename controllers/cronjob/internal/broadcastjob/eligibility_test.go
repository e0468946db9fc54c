package broadcastjob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func TestEligibility(t *testing.T) {
	gpu := map[string]string{"gpu": "true", "zone": "a"}
	noSchedule := corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoExecute}
	prefer := corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectPreferNoSchedule}
	tolerateDedicated := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra"}}
	cordoned := node("n", nil)
	cordoned.Spec.Unschedulable = true
	deleting := node("n", nil)
	deleting.DeletionTimestamp = &metav1.Time{}

	cases := []struct {
		name   string
		spec   corev1.PodSpec
		node   *corev1.Node
		want   bool
		reason string
	}{
		{name: "no constraints", node: node("n", nil), want: true},
		{name: "nodeSelector matches", spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "true"}}, node: node("n", gpu), want: true},
		{name: "nodeSelector does not match", spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "true"}}, node: node("n", nil), reason: "does not match"},
		{name: "required affinity In matches", spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}})},
			node: node("n", gpu), want: true},
		{name: "required affinity NotIn excludes", spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}})},
			node: node("n", gpu), reason: "does not match"},
		{name: "required affinity terms are ORed", spec: corev1.PodSpec{Affinity: requiredAffinity(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z"}}}},
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}})},
			node: node("n", gpu), want: true},
		{name: "matchFields by node name", spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}})},
			node: node("n", nil), reason: "does not match"},
		{name: "nodeSelector and affinity are ANDed", spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "false"}, Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}})},
			node: node("n", gpu), reason: "does not match"},
		{name: "untolerated NoSchedule taint", node: node("n", nil, noSchedule), reason: "taint dedicated=infra:NoSchedule is not tolerated"},
		{name: "untolerated NoExecute taint", node: node("n", nil, noExecute), reason: "NoExecute is not tolerated"},
		{name: "PreferNoSchedule is ignored", node: node("n", nil, prefer), want: true},
		{name: "tolerated NoSchedule and NoExecute", spec: corev1.PodSpec{Tolerations: tolerateDedicated}, node: node("n", nil, noSchedule, noExecute), want: true},
		{name: "toleration for another value", spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db"}}},
			node: node("n", nil, noSchedule), reason: "not tolerated"},
		{name: "Exists toleration with empty key tolerates all", spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			node: node("n", nil, noSchedule, noExecute), want: true},
		{name: "toleration effect must match", spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
			node: node("n", nil, noExecute), reason: "NoExecute is not tolerated"},
		{name: "cordoned node", node: cordoned, reason: "unschedulable"},
		{name: "cordoned node, unschedulable tolerated", spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}},
			node: cordoned, want: true},
		{name: "template nodeName elsewhere", spec: corev1.PodSpec{NodeName: "other"}, node: node("n", nil), reason: "bound to node"},
		{name: "template nodeName here", spec: corev1.PodSpec{NodeName: "n"}, node: node("n", nil), want: true},
		{name: "node being deleted", node: deleting, reason: "being deleted"},
		{name: "invalid affinity", spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near", Values: []string{"a"}}}})},
			node: node("n", gpu), reason: "invalid node affinity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := newEligibility(klog.Background(), &tc.spec).check(tc.node)
			assert.Equal(t, tc.want, ok, reason)
			if !tc.want {
				assert.Contains(t, reason, tc.reason)
			}
		})
	}
}

func TestEligibleNodesKeepsOrder(t *testing.T) {
	spec := corev1.PodSpec{NodeSelector: map[string]string{"run": "yes"}}
	nodes := []*corev1.Node{node("a", map[string]string{"run": "yes"}), node("b", nil), node("c", map[string]string{"run": "yes"})}
	assert.Equal(t, []string{"a", "c"}, newEligibility(klog.Background(), &spec).eligibleNodes(nodes))
}
