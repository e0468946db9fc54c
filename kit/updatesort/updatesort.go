// Package updatesort orders the pods a workload is about to update by the
// user's updateStrategy.priorityStrategy and scatterStrategy, as OpenKruise's
// CloneSet, Advanced StatefulSet and SidecarSet do. It is pure: pods are
// read, never modified, and the input slice is not reordered.
package updatesort

import (
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// Sort returns pods reordered by priority, then scatter. Pods that the
// strategies do not tell apart keep their input order, so callers pass them
// already in their default order.
func Sort(pods []*corev1.Pod, priority *pub.UpdatePriorityStrategy, scatter pub.UpdateScatterStrategy) []*corev1.Pod {
	out := slices.Clone(pods)
	if priority != nil {
		out = byPriority(out, priority)
	}
	for _, term := range scatter {
		out = scatterTerm(out, term)
	}
	return out
}

func byPriority(pods []*corev1.Pod, p *pub.UpdatePriorityStrategy) []*corev1.Pod {
	switch {
	case len(p.WeightPriority) > 0:
		selectors := make([]labels.Selector, len(p.WeightPriority))
		for i, t := range p.WeightPriority {
			s, err := metav1.LabelSelectorAsSelector(&t.MatchSelector)
			if err != nil {
				s = labels.Nothing()
			}
			selectors[i] = s
		}
		weight := func(pod *corev1.Pod) int64 {
			var w int64
			for i, s := range selectors {
				if s.Matches(labels.Set(pod.Labels)) {
					w += int64(p.WeightPriority[i].Weight)
				}
			}
			return w
		}
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int { return cmpDesc(weight(a), weight(b)) })
	case len(p.OrderPriority) > 0:
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
			for _, t := range p.OrderPriority {
				va, oka := OrderValue(a.Labels[t.OrderedKey])
				vb, okb := OrderValue(b.Labels[t.OrderedKey])
				switch {
				case oka && !okb:
					return -1
				case !oka && okb:
					return 1
				case oka && va != vb:
					return cmpDesc(va, vb)
				}
			}
			return 0
		})
	}
	return pods
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

var trailingDigits = regexp.MustCompile(`[0-9]+$`)

// OrderValue is the number an orderPriority label value stands for: the
// value itself, or the digits it ends with ("v10" → 10). ok is false for a
// missing value or one without trailing digits.
func OrderValue(v string) (int64, bool) {
	m := trailingDigits.FindString(v)
	if m == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(m, 10, 64)
	return n, err == nil
}

// scatterTerm spreads the pods labelled term.Key=term.Value evenly over the
// order: with m such pods among n, the k-th is placed at about k·n/m, the
// others keep their relative order in between.
func scatterTerm(pods []*corev1.Pod, term pub.UpdateScatterTerm) []*corev1.Pod {
	var matched, rest []*corev1.Pod
	for _, p := range pods {
		if v, ok := p.Labels[term.Key]; ok && v == term.Value {
			matched = append(matched, p)
		} else {
			rest = append(rest, p)
		}
	}
	n, m := len(pods), len(matched)
	if m == 0 || m == n {
		return pods
	}
	out := make([]*corev1.Pod, 0, n)
	k := 0
	for pos := 0; pos < n; pos++ {
		if k < m && k*n <= pos*m {
			out = append(out, matched[k])
			k++
			continue
		}
		out = append(out, rest[pos-k])
	}
	return out
}
