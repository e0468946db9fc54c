package revision

import (
	"bytes"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
)

// Equivalent reports whether two revision data documents mean the same
// template although their bytes may differ: both are decoded as JSON and
// compared with EqualJSON (key order, whitespace and a member set to null
// versus left out make no difference). Undecodable data is equivalent to
// nothing but identical bytes.
//
// It lets a workload recognise its template in a revision another writer
// encoded differently: OpenKruise v1.9 (Kubernetes 1.32 types) writes
// "creationTimestamp":null in the template metadata, Flotilla before the
// OpenKruise-exact encoding of TemplatePatch did not.
func Equivalent(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var av, bv any
	if json.Unmarshal(a, &av) != nil || json.Unmarshal(b, &bv) != nil {
		return false
	}
	return EqualJSON(av, bv)
}

// FindEquivalent returns the revisions whose data is Equivalent to data, in
// the order given.
func FindEquivalent(revisions []*appsv1.ControllerRevision, data []byte) []*appsv1.ControllerRevision {
	var want any
	if json.Unmarshal(data, &want) != nil {
		return FindEqual(revisions, data)
	}
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, data) {
			out = append(out, r)
			continue
		}
		var got any
		if json.Unmarshal(r.Data.Raw, &got) == nil && EqualJSON(got, want) {
			out = append(out, r)
		}
	}
	return out
}

// EqualJSON compares two values decoded by encoding/json into interfaces
// (nil, bool, float64, string, []any, map[string]any) without reflection.
// An object member whose value is null equals a missing member: in the
// Kubernetes API both decode to the zero value, so they carry the same
// meaning (metav1.Time encodes its zero value as null). Array elements are
// compared by position; a null element is not dropped.
func EqualJSON(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case float64:
		bv, ok := b.(float64)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !EqualJSON(av[i], bv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		return ok && EqualMembers(av, bv, nil)
	default:
		return false // not produced by encoding/json
	}
}

// EqualMembers reports whether objects a and b hold EqualJSON values under
// every key but those skip accepts (skip may be nil); a member that is null
// on one side and missing on the other is equal.
func EqualMembers(a, b map[string]any, skip func(key string) bool) bool {
	for k, x := range a {
		if skip != nil && skip(k) {
			continue
		}
		if !EqualJSON(x, b[k]) { // b[k] is nil when missing
			return false
		}
	}
	for k, y := range b {
		if skip != nil && skip(k) {
			continue
		}
		if _, ok := a[k]; !ok && y != nil {
			return false
		}
	}
	return true
}
