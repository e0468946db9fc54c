package controller

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// span is an inclusive range of reserved ordinals.
type span struct{ lo, hi int }

// reservation is spec.reserveOrdinals as sorted, merged spans: what it costs
// to hold and to query grows with the number of entries, never with the
// number of ordinals they cover.
type reservation []span

// has reports whether ordinal o is reserved.
func (r reservation) has(o int) bool {
	i := sort.Search(len(r), func(i int) bool { return r[i].hi >= o })
	return i < len(r) && r[i].lo <= o
}

// reservedOrdinals parses spec.reserveOrdinals: integers and inclusive
// ranges written "a-b", at most pub.MaxReservedOrdinals ordinals in all (the
// CRD's bound, enforced again for objects stored before it). The field path
// in errors is the user's.
func reservedOrdinals(in []intstr.IntOrString) (reservation, error) {
	out := make(reservation, 0, len(in))
	total := 0
	for i, v := range in {
		var lo, hi int
		if v.Type == intstr.Int {
			if v.IntVal < 0 {
				return nil, fmt.Errorf("spec.reserveOrdinals[%d]: %d is negative", i, v.IntVal)
			}
			lo, hi = int(v.IntVal), int(v.IntVal)
		} else {
			var err error
			if lo, hi, err = parseRange(v.StrVal); err != nil {
				return nil, fmt.Errorf("spec.reserveOrdinals[%d]: %w", i, err)
			}
		}
		// hi-lo cannot overflow (0 <= lo <= hi <= MaxInt32); the sum is
		// checked entry by entry, so it cannot either.
		if total += hi - lo + 1; total > pub.MaxReservedOrdinals {
			return nil, fmt.Errorf("spec.reserveOrdinals reserves more than %d ordinals in all (entries 0 to %d)", pub.MaxReservedOrdinals, i)
		}
		out = append(out, span{lo, hi})
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, s.hi)
			continue
		}
		merged = append(merged, s)
	}
	return merged, nil
}

// parseRange parses "n" or "a-b" with 0 <= a <= b <= MaxInt32 (an ordinal
// is an int32 upstream: ordinals.start and replicas are).
func parseRange(s string) (int, int, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		if n < 0 || n > math.MaxInt32 {
			return 0, 0, fmt.Errorf("%q is not an ordinal between 0 and %d", s, math.MaxInt32)
		}
		return n, n, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is neither an ordinal nor a range \"a-b\"", s)
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%q is not a range \"a-b\" with 0 <= a <= b <= %d", s, math.MaxInt32)
	}
	return lo, hi, nil
}

// slotOrdinals are the ordinals the replicas occupy, ascending: from start,
// skipping reserved ordinals, until replicas of them are counted. A reserved
// ordinal still leaves its replica to the next free ordinal. Reserved spans
// are jumped over, so their width costs nothing.
func slotOrdinals(replicas, start int, reserved reservation) []int {
	out := make([]int, 0, max(replicas, 0))
	i := sort.Search(len(reserved), func(i int) bool { return reserved[i].hi >= start })
	for o := start; len(out) < replicas; {
		if i < len(reserved) && reserved[i].lo <= o {
			o = reserved[i].hi + 1
			i++
			continue
		}
		end := math.MaxInt
		if i < len(reserved) {
			end = reserved[i].lo
		}
		for ; o < end && len(out) < replicas; o++ {
			out = append(out, o)
		}
	}
	return out
}

// isSlot reports whether ordinal o is one of slots (ascending).
func isSlot(slots []int, o int) bool {
	_, found := slices.BinarySearch(slots, o)
	return found
}

// slotIndex is the position of ordinal o in slots (ascending), or -1.
func slotIndex(slots []int, o int) int {
	if i, found := slices.BinarySearch(slots, o); found {
		return i
	}
	return -1
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
