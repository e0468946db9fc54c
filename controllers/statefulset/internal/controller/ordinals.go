package controller

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
)

// reservedOrdinals parses spec.reserveOrdinals: integers and inclusive
// ranges written "a-b". The field path in errors is the user's.
func reservedOrdinals(in []intstr.IntOrString) (sets.Set[int], error) {
	out := sets.New[int]()
	for i, v := range in {
		if v.Type == intstr.Int {
			if v.IntVal < 0 {
				return nil, fmt.Errorf("spec.reserveOrdinals[%d]: %d is negative", i, v.IntVal)
			}
			out.Insert(int(v.IntVal))
			continue
		}
		lo, hi, err := parseRange(v.StrVal)
		if err != nil {
			return nil, fmt.Errorf("spec.reserveOrdinals[%d]: %w", i, err)
		}
		for o := lo; o <= hi; o++ {
			out.Insert(o)
		}
	}
	return out, nil
}

// maxRangeWidth bounds one reserveOrdinals range, so a typo cannot make the
// controller allocate millions of entries.
const maxRangeWidth = 100000

func parseRange(s string) (int, int, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		if n < 0 {
			return 0, 0, fmt.Errorf("%q is negative", s)
		}
		return n, n, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is neither an ordinal nor a range \"a-b\"", s)
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("%q is not a range \"a-b\" with 0 <= a <= b", s)
	}
	if hi-lo >= maxRangeWidth {
		return 0, 0, fmt.Errorf("range %q spans more than %d ordinals", s, maxRangeWidth)
	}
	return lo, hi, nil
}

// slotOrdinals are the ordinals the replicas occupy, ascending: from start,
// skipping reserved ordinals, until replicas of them are counted. A reserved
// ordinal still leaves its replica to the next free ordinal.
func slotOrdinals(replicas, start int, reserved sets.Set[int]) []int {
	out := make([]int, 0, replicas)
	for o := start; len(out) < replicas; o++ {
		if !reserved.Has(o) {
			out = append(out, o)
		}
	}
	return out
}

// ordinalOf returns the ordinal in a pod or claim name "<prefix>-<ordinal>",
// or false when the name has no such suffix.
func ordinalOf(prefix, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// podName is the name of the pod at ordinal.
func podName(set string, ordinal int) string { return fmt.Sprintf("%s-%d", set, ordinal) }

// claimName is the PVC of one volumeClaimTemplate for the pod at ordinal:
// <template>-<set>-<ordinal>, as upstream.
func claimName(template, set string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set, ordinal)
}
