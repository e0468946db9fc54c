package controller

import (
	"encoding/json"
	"sort"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// DefaultSpecBudget bounds the JSON size of a NodePodProbe spec. The whole
// object (spec, the agent's status, metadata) must stay under etcd's request
// limit (--max-request-bytes, 1.5 MiB by default); the status is small next
// to the spec (one state per probe, messages ≤ 1 KiB), so 1 MiB leaves it
// room.
const DefaultSpecBudget = 1 << 20

// ReasonTooLarge is the reason of the Warning event each PodProbeMarker of a
// namespace gets when that namespace's probes are left out of a node's
// NodePodProbe because the spec would exceed the budget.
const ReasonTooLarge = "NodePodProbeTooLarge"

// dropped is a namespace left out of a NodePodProbe spec and the bytes its
// entries took.
type droppedNamespace struct {
	Namespace string
	Bytes     int
}

// fitSpec returns the in-scope namespaces to leave out of spec (a node's
// NodePodProbe entries) so that what remains is at most budget bytes of JSON:
// the largest namespace first, then the next, until it fits. A namespace is
// the unit because it is the tenant: one namespace's markers — however many,
// however they split their probes — can cost only that namespace its probes
// on the node, never another's. Namespaces out of scope count toward the
// size but are never dropped (they are not this reconciler's to touch). size
// is the JSON size of what remains.
func fitSpec(spec []appsv1alpha1.PodProbe, budget int, inScope func(string) bool) (drop []droppedNamespace, size int) {
	byNS := map[string]int{}
	size = 2 // []
	for i := range spec {
		n := entrySize(&spec[i]) + 1 // the comma
		size += n
		if inScope(spec[i].Namespace) {
			byNS[spec[i].Namespace] += n
		}
	}
	if size <= budget {
		return nil, size
	}
	cands := make([]droppedNamespace, 0, len(byNS))
	for ns, n := range byNS {
		cands = append(cands, droppedNamespace{Namespace: ns, Bytes: n})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].Bytes != cands[j].Bytes {
			return cands[i].Bytes > cands[j].Bytes
		}
		return cands[i].Namespace < cands[j].Namespace
	})
	for _, c := range cands {
		if size <= budget {
			break
		}
		drop = append(drop, c)
		size -= c.Bytes
	}
	return drop, size
}

// entrySize is the JSON size of one NodePodProbe entry.
func entrySize(p *appsv1alpha1.PodProbe) int {
	b, err := json.Marshal(p)
	if err != nil {
		return 0 // a struct of strings and numbers always marshals
	}
	return len(b)
}

// withoutNamespaces returns spec without the entries of the namespaces in
// drop.
func withoutNamespaces(spec []appsv1alpha1.PodProbe, drop []droppedNamespace) []appsv1alpha1.PodProbe {
	if len(drop) == 0 {
		return spec
	}
	gone := map[string]bool{}
	for _, d := range drop {
		gone[d.Namespace] = true
	}
	out := make([]appsv1alpha1.PodProbe, 0, len(spec))
	for _, p := range spec {
		if !gone[p.Namespace] {
			out = append(out, p)
		}
	}
	return out
}
