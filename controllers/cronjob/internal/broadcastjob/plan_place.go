package broadcastjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

// eligibilityOptions: OpenKruise's BroadcastJob also requires the pod's requests to fit the node on their own.
var eligibilityOptions = nodeplacement.Options{ResourceFit: true}

// newEligibility is the eligibility of a BroadcastJob pod spec.
func newEligibility(logger klog.Logger, spec *corev1.PodSpec) nodeplacement.Eligibility {
	return nodeplacement.New(logger, spec, eligibilityOptions)
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
func place(logger klog.Logger, template nodeplacement.Eligibility, nodes []*corev1.Node, byNode map[string][]*corev1.Pod) placement {
	var p placement
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		seen[n.Name] = true
		pods := byNode[n.Name]
		if len(pods) == 0 {
			if ok, why := template.Check(n); ok {
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
			if ok, why := newEligibility(logger, &pod.Spec).Check(n); !ok {
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
