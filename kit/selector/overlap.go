// Package selector reasons about label selectors on their own, before any
// object exists: whether two of them can match a common label set. Admission
// webhooks use it to refuse a new object whose selector would compete with an
// existing one's (SidecarSet, PodUnavailableBudget).
package selector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Overlap reports whether some label set matches both a and b. It is false
// only when, for some key, the requirements of the two selectors together
// contradict each other (different required values, a label one requires
// and the other forbids, ...). A nil selector matches everything.
func Overlap(a, b *metav1.LabelSelector) bool {
	byKey := map[string]*constraint{}
	for _, s := range []*metav1.LabelSelector{a, b} {
		for _, r := range requirements(s) {
			c := byKey[r.Key]
			if c == nil {
				c = &constraint{}
				byKey[r.Key] = c
			}
			c.add(r)
		}
	}
	for _, c := range byKey {
		if !c.satisfiable() {
			return false
		}
	}
	return true
}

// Keys are the label keys s constrains (matchLabels and matchExpressions).
func Keys(s *metav1.LabelSelector) sets.Set[string] {
	keys := sets.New[string]()
	for _, r := range requirements(s) {
		keys.Insert(r.Key)
	}
	return keys
}

// requirements are s's matchLabels as In requirements plus its
// matchExpressions.
func requirements(s *metav1.LabelSelector) []metav1.LabelSelectorRequirement {
	if s == nil {
		return nil
	}
	reqs := make([]metav1.LabelSelectorRequirement, 0, len(s.MatchLabels)+len(s.MatchExpressions))
	for k, v := range s.MatchLabels {
		reqs = append(reqs, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
	}
	return append(reqs, s.MatchExpressions...)
}

// constraint is what a set of requirements asks of one label key.
type constraint struct {
	exists, absent bool
	in             sets.Set[string] // nil: any value
	notIn          sets.Set[string]
}

func (c *constraint) add(r metav1.LabelSelectorRequirement) {
	switch r.Operator {
	case metav1.LabelSelectorOpIn:
		c.exists = true
		if vs := sets.New(r.Values...); c.in == nil {
			c.in = vs
		} else {
			c.in = c.in.Intersection(vs)
		}
	case metav1.LabelSelectorOpNotIn:
		if c.notIn == nil {
			c.notIn = sets.New[string]()
		}
		c.notIn.Insert(r.Values...)
	case metav1.LabelSelectorOpExists:
		c.exists = true
	case metav1.LabelSelectorOpDoesNotExist:
		c.absent = true
	}
}

func (c *constraint) satisfiable() bool {
	if c.exists && c.absent {
		return false
	}
	return c.in == nil || c.in.Difference(c.notIn).Len() > 0
}
