package broadcastjob

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// unschedulableTaint is how the scheduler (and the node lifecycle controller, with some lag) see a
// cordoned node: a NoSchedule taint that only a matching toleration gets past.
var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// eligibility decides which nodes a BroadcastJob's template can run on. It asks the questions the
// scheduler would ask before binding (and that a DaemonSet asks of its nodes): the template's nodeName, its
// nodeSelector and required node affinity, and whether every NoSchedule/NoExecute taint is tolerated. A
// cordoned node (spec.unschedulable) is ineligible unless the template tolerates
// node.kubernetes.io/unschedulable:NoSchedule. Resources are not considered: a pod that does not fit stays
// Pending and counts as active. Build one per sync; it holds the parsed affinity so nodes are cheap to test.
type eligibility struct {
	logger   klog.Logger
	spec     *corev1.PodSpec
	affinity nodeaffinity.RequiredNodeAffinity
}

func newEligibility(logger klog.Logger, spec *corev1.PodSpec) eligibility {
	return eligibility{logger: logger, spec: spec, affinity: nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity)}
}

// check reports whether node can run the pod and, if not, why (for logs and tests).
func (e eligibility) check(node *corev1.Node) (bool, string) {
	if node.DeletionTimestamp != nil {
		return false, "node is being deleted"
	}
	if e.spec.NodeName != "" && e.spec.NodeName != node.Name {
		return false, fmt.Sprintf("template is bound to node %q", e.spec.NodeName)
	}
	match, err := e.affinity.Match(node)
	if err != nil {
		return false, fmt.Sprintf("invalid node affinity: %v", err)
	}
	if !match {
		return false, "node selector or required node affinity does not match"
	}
	noScheduleOrExecute := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	// Comparison operators (Gt/Lt) can only be in a stored template if the API server accepted them,
	// so honouring them here never widens what the scheduler would allow.
	if taint, found := schedulingcorev1.FindMatchingUntoleratedTaint(e.logger, node.Spec.Taints, e.spec.Tolerations, noScheduleOrExecute, true); found {
		return false, fmt.Sprintf("taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect)
	}
	if node.Spec.Unschedulable && !schedulingcorev1.TolerationsTolerateTaint(e.logger, e.spec.Tolerations, &unschedulableTaint, true) {
		return false, "node is unschedulable (cordoned)"
	}
	return true, ""
}

// eligibleNodes returns the names of the nodes the template can run on, in the order given.
func (e eligibility) eligibleNodes(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if ok, _ := e.check(n); ok {
			out = append(out, n.Name)
		}
	}
	return out
}
