package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

func TestPlanUpdate(t *testing.T) {
	v2 := atRevision("web-v2")
	slots5 := []int{0, 1, 2, 3, 4}
	for _, tc := range []struct {
		name           string
		slots          []int
		pods           []*corev1.Pod
		partition      int
		maxUnavailable int
		priority       *pub.UpdatePriorityStrategy
		want           []string
	}{
		{name: "highest ordinal first, one at a time", slots: slots5, maxUnavailable: 1,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3), testPod(4)}, want: []string{"web-4"}},
		{name: "updated pods are skipped", slots: slots5, maxUnavailable: 1,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3, v2), testPod(4, v2)}, want: []string{"web-2"}},
		{name: "partition keeps the low ordinals", slots: slots5, partition: 3, maxUnavailable: 5,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3), testPod(4)}, want: []string{"web-4", "web-3"}},
		{name: "a missing slot counts as unavailable", slots: slots5, maxUnavailable: 1,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3)}, want: []string{}},
		{name: "unavailable targets cost nothing; available ones wait (kruise's skip, not stop)", slots: slots5, partition: 2, maxUnavailable: 2,
			pods: []*corev1.Pod{testPod(0), testPod(1, notReady), testPod(2, notReady), testPod(3), testPod(4)}, want: []string{"web-2"}},
		{name: "maxUnavailable 2", slots: slots5, maxUnavailable: 2,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3), testPod(4)}, want: []string{"web-4", "web-3"}},
		{name: "specified-delete goes first and ignores the partition", slots: slots5, partition: 5, maxUnavailable: 1,
			pods: []*corev1.Pod{testPod(0, specifiedDelete), testPod(1), testPod(2), testPod(3), testPod(4)}, want: []string{"web-0"}},
		{name: "terminating pods are not targets", slots: slots5, maxUnavailable: 3,
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2), testPod(3), testPod(4, terminating)}, want: []string{"web-3", "web-2"}},
		{name: "reserved ordinals: the partition counts slots", slots: []int{0, 2, 3}, partition: 1, maxUnavailable: 3,
			pods: []*corev1.Pod{testPod(0), testPod(2), testPod(3)}, want: []string{"web-3", "web-2"}},
		{name: "unordered: by priority, capped by replicas - partition", slots: slots5, partition: 3, maxUnavailable: 5,
			priority: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 10, MatchSelector: selector("tier", "low")}}},
			pods:     []*corev1.Pod{testPod(0), testPod(1, label("tier", "low")), testPod(2), testPod(3, v2), testPod(4)},
			want:     []string{"web-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planUpdate(updateInput{
				slots: tc.slots, pods: podMap(tc.pods...), partition: tc.partition, maxUnavailable: tc.maxUnavailable,
				isUpdated: func(p *corev1.Pod) bool { return p.Labels[pub.ControllerRevisionHashLabelKey] == "web-v2" },
				available: func(p *corev1.Pod) bool {
					return p.DeletionTimestamp == nil && podutil.IsRunningAndReady(p)
				},
				unordered: tc.priority,
			})
			assert.Equal(t, tc.want, names(got))
		})
	}
}
