package broadcastjob

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// unschedulableTaint is how the scheduler (and the node lifecycle controller, with some lag) see a
// cordoned node: a NoSchedule taint that only a matching toleration gets past.
var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// eligibility decides whether a pod spec can run on a node. It asks what OpenKruise's BroadcastJob asks before
// placing a pod (and keeps asking of a pod already placed): the spec's nodeName, its nodeSelector and required node
// affinity, whether every NoSchedule/NoExecute taint is tolerated, whether a cordoned node (spec.unschedulable)
// is tolerated through node.kubernetes.io/unschedulable:NoSchedule, and whether the pod's requests fit the node's
// allocatable on their own (the node's other pods are not counted, as in OpenKruise: whether there is room left
// is the scheduler's call). Build one per spec and sync; it holds the parsed affinity and the summed requests.
type eligibility struct {
	logger   klog.Logger
	spec     *corev1.PodSpec
	affinity nodeaffinity.RequiredNodeAffinity
	requests corev1.ResourceList
}

func newEligibility(logger klog.Logger, spec *corev1.PodSpec) eligibility {
	return eligibility{logger: logger, spec: spec, affinity: nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
		requests: resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})}
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
	if why := insufficient(e.requests, node.Status.Allocatable); why != "" {
		return false, why
	}
	return true, ""
}

// insufficient says which requests exceed the node's allocatable, "" if they fit. The checks are the scheduler's
// resource-fit ones on an empty node: room for one pod, then cpu, memory, ephemeral storage and scalar resources
// (extended, hugepages, prefixed native, attachable volumes) that are requested. Other names are not the
// scheduler's business and are ignored.
func insufficient(requests, allocatable corev1.ResourceList) string {
	var short []string
	if allocatable.Pods().Value() < 1 {
		short = append(short, "pods")
	}
	for name, q := range requests {
		if q.Sign() <= 0 || !fitChecked(name) {
			continue
		}
		if alloc := allocatable[name]; q.Cmp(alloc) > 0 {
			short = append(short, fmt.Sprintf("%s (requests %s, allocatable %s)", name, q.String(), alloc.String()))
		}
	}
	if len(short) == 0 {
		return ""
	}
	sort.Strings(short)
	return "insufficient " + strings.Join(short, ", ")
}

// fitChecked reports whether the scheduler's resource fit looks at a resource of this name.
func fitChecked(name corev1.ResourceName) bool {
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage:
		return true
	case strings.Contains(string(name), "/"): // extended (example.com/gpu) and prefixed native (kubernetes.io/...)
		return true
	default:
		return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), "attachable-volumes-")
	}
}

// placement is where the job runs, from the nodes and the pods it already has.
type placement struct {
	desired []string      // nodes the job runs on (status.desired), in the order of the nodes given
	free    []string      // desired nodes without any pod of the job: where new pods go, in order
	evict   []*corev1.Pod // pods their node no longer fits: deleted while the job runs
}

// place decides, node by node, as OpenKruise does: a node without a pod of the job is desired if the template
// fits it; a node with pods is desired as long as they fit it, each judged by its own spec (its tolerations,
// affinity and requests, as the API server stored them). A pod that no longer fits (the node was relabelled,
// tainted, cordoned, or shrank), whatever its phase, is evicted and its node leaves the desired set. Pods being
// deleted keep their node. OpenKruise leaves alone the pods whose node is gone; here the unbound ones among them
// are evicted too, since they could never start and would keep the job active forever (bound ones are the pod
// garbage collector's).
func place(logger klog.Logger, template eligibility, nodes []*corev1.Node, byNode map[string][]*corev1.Pod) placement {
	var p placement
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		seen[n.Name] = true
		pods := byNode[n.Name]
		if len(pods) == 0 {
			if ok, why := template.check(n); ok {
				p.desired = append(p.desired, n.Name)
				p.free = append(p.free, n.Name)
			} else {
				logger.V(4).Info("Node not eligible", "node", n.Name, "reason", why)
			}
			continue
		}
		kept := false
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				kept = true
				continue
			}
			if ok, why := newEligibility(logger, &pod.Spec).check(n); !ok {
				logger.V(2).Info("Pod no longer fits its node", "pod", klog.KObj(pod), "node", n.Name, "reason", why)
				p.evict = append(p.evict, pod)
				continue
			}
			kept = true
		}
		if kept {
			p.desired = append(p.desired, n.Name)
		}
	}
	for node, pods := range byNode {
		if seen[node] {
			continue
		}
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil && pod.Spec.NodeName == "" && !podFinished(pod) {
				p.evict = append(p.evict, pod)
			}
		}
	}
	return p
}
