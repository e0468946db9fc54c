package selector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func labels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func TestOverlap(t *testing.T) {
	cases := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"same labels", labels("app", "web"), labels("app", "web"), true},
		{"different values", labels("app", "web"), labels("app", "db"), false},
		{"disjoint keys can meet", labels("app", "web"), labels("tier", "front"), true},
		{"nil matches all", nil, labels("app", "web"), true},
		{"In vs In sharing a value", expr("app", metav1.LabelSelectorOpIn, "a", "b"), expr("app", metav1.LabelSelectorOpIn, "b", "c"), true},
		{"In vs In sharing none", expr("app", metav1.LabelSelectorOpIn, "a"), expr("app", metav1.LabelSelectorOpIn, "c"), false},
		{"In vs NotIn all excluded", expr("app", metav1.LabelSelectorOpIn, "a"), expr("app", metav1.LabelSelectorOpNotIn, "a", "b"), false},
		{"In vs NotIn one left", expr("app", metav1.LabelSelectorOpIn, "a", "c"), expr("app", metav1.LabelSelectorOpNotIn, "a"), true},
		{"Exists vs DoesNotExist", expr("app", metav1.LabelSelectorOpExists), expr("app", metav1.LabelSelectorOpDoesNotExist), false},
		{"In vs DoesNotExist", labels("app", "web"), expr("app", metav1.LabelSelectorOpDoesNotExist), false},
		{"NotIn vs DoesNotExist", expr("app", metav1.LabelSelectorOpNotIn, "a"), expr("app", metav1.LabelSelectorOpDoesNotExist), true},
		{"Exists vs NotIn", expr("app", metav1.LabelSelectorOpExists), expr("app", metav1.LabelSelectorOpNotIn, "a"), true},
		// OpenKruise's IsSelectorOverlapping calls these disjoint; {app: web} and {app: web, x Exists} both select
		// a pod labelled app=web,x=1 (SidecarSet's webhook relies on this answer).
		{"Exists on a key the other leaves free", labels("app", "web"),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: metav1.LabelSelectorOpExists}}}, true},
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("%s: Overlap = %v, want %v", c.name, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("%s (swapped): Overlap = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestKeys(t *testing.T) {
	s := labels("app", "web")
	s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}, {Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}
	if got, want := Keys(s), sets.New("app", "tier"); !got.Equal(want) {
		t.Errorf("Keys = %v, want %v", sets.List(got), sets.List(want))
	}
	if Keys(nil).Len() != 0 {
		t.Errorf("Keys(nil) is empty")
	}
}
