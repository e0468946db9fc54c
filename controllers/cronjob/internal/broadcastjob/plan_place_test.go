package broadcastjob

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

func TestPlace(t *testing.T) {
	run := map[string]string{"run": "yes"}
	template := corev1.PodSpec{NodeSelector: run}
	// podOn is a pod of the template pinned to (and bound on) node n, in phase.
	podOn := func(name, n string, phase corev1.PodPhase, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := jobPod(name, n, phase, true)
		p.Spec.NodeSelector = run
		for _, m := range mods {
			m(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	tolerating := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	}
	big := func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
	}
	taint := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	cordoned := node("c", run)
	cordoned.Spec.Unschedulable = true

	cases := []struct {
		name    string
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		desired []string
		free    []string
		evict   []string
	}{
		{name: "template decides for nodes without a pod, in order", nodes: []*corev1.Node{node("a", run), node("b", nil), node("c", run)},
			desired: []string{"a", "c"}, free: []string{"a", "c"}},
		{name: "a node with a pod in any phase is desired but not free",
			nodes:   []*corev1.Node{node("a", run), node("b", run), node("c", run)},
			pods:    []*corev1.Pod{podOn("p1", "a", corev1.PodFailed), podOn("p2", "b", corev1.PodSucceeded)},
			desired: []string{"a", "b", "c"}, free: []string{"c"}},
		{name: "relabelled node: its pod is evicted, whatever its phase, and the node is no longer desired",
			nodes: []*corev1.Node{node("a", nil), node("b", nil)},
			pods:  []*corev1.Pod{podOn("p1", "a", corev1.PodRunning), podOn("p2", "b", corev1.PodSucceeded)},
			evict: []string{"p1", "p2"}},
		{name: "tainted node: evicted unless the pod itself tolerates the taint",
			nodes:   []*corev1.Node{node("a", run, taint), node("b", run, taint)},
			pods:    []*corev1.Pod{podOn("p1", "a", corev1.PodRunning), podOn("p2", "b", corev1.PodRunning, tolerating)},
			desired: []string{"b"}, evict: []string{"p1"}},
		{name: "cordoned node evicts its pod", nodes: []*corev1.Node{cordoned}, pods: []*corev1.Pod{podOn("p1", "c", corev1.PodRunning)},
			evict: []string{"p1"}},
		{name: "node that shrank below the pod's requests evicts it",
			nodes:   []*corev1.Node{withAllocatable(node("a", run), corev1.ResourceCPU, "2"), node("b", run)},
			pods:    []*corev1.Pod{podOn("p1", "a", corev1.PodRunning, big), podOn("p2", "b", corev1.PodRunning, big)},
			desired: []string{"b"}, evict: []string{"p1"}},
		{name: "a pod being deleted keeps its node", nodes: []*corev1.Node{node("a", nil)},
			pods: []*corev1.Pod{podOn("p1", "a", corev1.PodRunning, deleting)}, desired: []string{"a"}},
		{name: "node gone: unbound unfinished pods are evicted, bound or finished ones left",
			nodes: []*corev1.Node{node("a", run)},
			pods: []*corev1.Pod{jobPod("u", "gone", corev1.PodPending, false), podOn("b", "gone", corev1.PodRunning),
				func() *corev1.Pod { p := jobPod("f", "gone2", corev1.PodFailed, false); return p }()},
			desired: []string{"a"}, free: []string{"a"}, evict: []string{"u"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tally := tallyPods(tc.pods, 0)
			got := place(klog.Background(), newEligibility(klog.Background(), &template), tc.nodes, tally.byNode)
			assert.Equal(t, tc.desired, got.desired, "desired")
			assert.Equal(t, tc.free, got.free, "free")
			assert.ElementsMatch(t, tc.evict, names(got.evict), "evict")
		})
	}
}

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}
