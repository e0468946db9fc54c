package podutil

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// RankBySameNode ranks pods for DeletionOrder.Rank the way OpenKruise ranks
// the group of pods it trims on scale-in: among the given pods on one node,
// ordered by DeletionOrder without availability, the first gets n-1, the
// next n-2, …, the last 0; a pod alone on its node, or unassigned, ranks 0.
// So a crowded node loses pods first, but never its last one only because
// it is crowded. Pass exactly the pods being chosen from (one revision's
// group), not the workload's whole pod list. The returned function knows
// the given pods only (by identity); any other pod ranks 0.
func RankBySameNode(pods []*corev1.Pod) func(*corev1.Pod) float64 {
	ranks := make(map[*corev1.Pod]float64)
	for _, onNode := range podsByNode(pods) {
		if len(onNode) < 2 {
			continue
		}
		sorted := DeletionOrder{IgnoreAvailability: true}.Sort(onNode)
		for i, p := range sorted {
			ranks[p] = float64(len(sorted) - 1 - i)
		}
	}
	return func(p *corev1.Pod) float64 { return ranks[p] }
}

// NodeLabels returns the labels of a node, and false when the node is not
// known (pods on unknown nodes take part in no topology domain).
type NodeLabels func(nodeName string) (map[string]string, bool)

// RankBySpread ranks pods for DeletionOrder.Rank by the template's
// topologySpreadConstraints keys, as OpenKruise does on scale-in: for each
// key, the pods are grouped by their node's value of that label; within a
// domain of n pods, ordered by DeletionOrder without availability (and, for
// keys other than kubernetes.io/hostname, ranked by RankBySameNode), the
// first gets n, the last 1. Each key's ranks are weighted by
// ln(domains + 2) and summed, so pods of the most populated domains of the
// most fragmented topologies go first.
func RankBySpread(pods []*corev1.Pod, topologyKeys []string, nodeLabels NodeLabels) func(*corev1.Pod) float64 {
	byNode := podsByNode(pods)
	sameNode := RankBySameNode(pods)
	ranks := make(map[*corev1.Pod]float64)
	for _, key := range topologyKeys {
		domains := make(map[string][]*corev1.Pod)
		for node, onNode := range byNode {
			labels, ok := nodeLabels(node)
			if !ok {
				continue
			}
			if v, ok := labels[key]; ok {
				domains[v] = append(domains[v], onNode...)
			}
		}
		order := DeletionOrder{IgnoreAvailability: true}
		if key != corev1.LabelHostname {
			order.Rank = sameNode
		}
		weight := math.Log(float64(len(domains) + 2))
		for _, inDomain := range domains {
			for i, p := range order.Sort(inDomain) {
				ranks[p] += float64(len(inDomain)-i) * weight
			}
		}
	}
	return func(p *corev1.Pod) float64 { return ranks[p] }
}

func podsByNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	byNode := make(map[string][]*corev1.Pod)
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	return byNode
}
