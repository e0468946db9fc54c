package nodeplacement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// node is a node with room for 110 pods, 4 CPUs and 8Gi of memory.
func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
}

func withAllocatable(n *corev1.Node, name corev1.ResourceName, q string) *corev1.Node {
	n.Status.Allocatable[name] = resource.MustParse(q)
	return n
}

// requesting is a pod spec whose one container requests the given resources (name, quantity pairs).
func requesting(kv ...string) corev1.PodSpec {
	req := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		req[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: req}}}}
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
		{name: "requests fit the allocatable", spec: requesting("cpu", "4", "memory", "8Gi"), node: node("n", nil), want: true},
		{name: "cpu request above the allocatable", spec: requesting("cpu", "4500m"), node: node("n", nil), reason: "insufficient cpu (requests 4500m, allocatable 4)"},
		{name: "memory request above the allocatable", spec: requesting("memory", "9Gi"), node: node("n", nil), reason: "insufficient memory"},
		{name: "the node's other pods are not counted", spec: requesting("cpu", "4"), node: node("n", nil), want: true},
		{name: "extended resource missing on the node", spec: requesting("example.com/gpu", "1"), node: node("n", nil), reason: "insufficient example.com/gpu"},
		{name: "extended resource present", spec: requesting("example.com/gpu", "1"), node: withAllocatable(node("n", nil), "example.com/gpu", "2"), want: true},
		{name: "hugepages checked", spec: requesting("hugepages-2Mi", "2Mi"), node: node("n", nil), reason: "insufficient hugepages-2Mi"},
		{name: "unprefixed unknown resource ignored", spec: requesting("widgets", "3"), node: node("n", nil), want: true},
		{name: "no room for a single pod", node: withAllocatable(node("n", nil), corev1.ResourcePods, "0"), reason: "insufficient pods"},
		{name: "init container's larger request counts", spec: func() corev1.PodSpec {
			s := requesting("cpu", "1")
			s.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}}}
			return s
		}(), node: node("n", nil), reason: "insufficient cpu"},
		{name: "invalid affinity", spec: corev1.PodSpec{Affinity: requiredAffinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near", Values: []string{"a"}}}})},
			node: node("n", gpu), reason: "invalid node affinity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := New(klog.Background(), &tc.spec, Options{ResourceFit: true}).Check(tc.node)
			assert.Equal(t, tc.want, ok, reason)
			if !tc.want {
				assert.Contains(t, reason, tc.reason)
			}
		})
	}
}
