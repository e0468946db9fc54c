package updatesort

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestSort(t *testing.T) {
	zoneA := map[string]string{"zone": "a"}
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		priority *pub.UpdatePriorityStrategy
		scatter  pub.UpdateScatterStrategy
		want     []string
	}{
		{
			name: "no strategy keeps the input order",
			pods: []*corev1.Pod{pod("a", nil), pod("b", nil), pod("c", nil)},
			want: []string{"a", "b", "c"},
		},
		{
			name: "weight: summed weights, higher first, ties stable",
			pods: []*corev1.Pod{pod("a", nil), pod("b", map[string]string{"x": "1"}), pod("c", map[string]string{"x": "1", "y": "1"}), pod("d", map[string]string{"y": "1"})},
			priority: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
				{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"x": "1"}}},
				{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"y": "1"}}},
			}},
			want: []string{"c", "b", "d", "a"},
		},
		{
			name: "order: higher value first, missing or non-numeric last, later keys break ties",
			pods: []*corev1.Pod{
				pod("none", nil), pod("p1", map[string]string{"prio": "1"}), pod("p10", map[string]string{"prio": "v10"}),
				pod("p1b", map[string]string{"prio": "1", "sub": "5"}), pod("bad", map[string]string{"prio": "high"}),
			},
			priority: &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "prio"}, {OrderedKey: "sub"}}},
			want:     []string{"p10", "p1b", "p1", "none", "bad"},
		},
		{
			name:    "scatter: 2 of 6 matching pods spread out",
			pods:    []*corev1.Pod{pod("a1", zoneA), pod("a2", zoneA), pod("b1", nil), pod("b2", nil), pod("b3", nil), pod("b4", nil)},
			scatter: pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
			want:    []string{"a1", "b1", "b2", "a2", "b3", "b4"},
		},
		{
			name:    "scatter: all matching is unchanged",
			pods:    []*corev1.Pod{pod("a1", zoneA), pod("a2", zoneA)},
			scatter: pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
			want:    []string{"a1", "a2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]*corev1.Pod(nil), tc.pods...)
			got := Sort(tc.pods, tc.priority, tc.scatter)
			assert.Equal(t, tc.want, names(got))
			assert.Equal(t, names(in), names(tc.pods), "input slice not reordered")
		})
	}
}

func TestOrderValue(t *testing.T) {
	for in, want := range map[string]int64{"7": 7, "v12": 12, "a-3": 3} {
		got, ok := OrderValue(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "abc", "1a"} {
		_, ok := OrderValue(in)
		assert.False(t, ok, in)
	}
}
