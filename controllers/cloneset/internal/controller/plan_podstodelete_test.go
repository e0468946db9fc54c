package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestMissingPodsToDelete(t *testing.T) {
	pods := []*corev1.Pod{testPod("web-a"), testPod("web-b"), testPod("web-c")}
	for _, tc := range []struct {
		name         string
		podsToDelete []string
		deleted      []string // pods this process deleted
		pods         []*corev1.Pod
		want         []string
	}{
		{name: "empty list", pods: pods, want: nil},
		{name: "every name is a pod", podsToDelete: []string{"web-c", "web-a"}, pods: pods, want: nil},
		{name: "unknown names, in spec order", podsToDelete: []string{"web-x", "web-a", "web-y"}, pods: pods, want: []string{"web-x", "web-y"}},
		{name: "a duplicated unknown name is reported twice", podsToDelete: []string{"web-x", "web-x"}, pods: pods, want: []string{"web-x", "web-x"}},
		{name: "no pods at all", podsToDelete: []string{"web-a"}, want: []string{"web-a"}},
		{name: "names are exact", podsToDelete: []string{"web", "WEB-A", "web-a "}, pods: pods, want: []string{"web", "WEB-A", "web-a "}},
		{
			name:         "a pod this process deleted is not missing",
			podsToDelete: []string{"web-gone", "web-x"}, deleted: []string{"web-gone"}, pods: pods,
			want: []string{"web-x"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := testCloneSet(3)
			cs.Spec.ScaleStrategy.PodsToDelete = tc.podsToDelete
			st := testState(cs)
			st.deleted.Insert(tc.deleted...)
			assert.Equal(t, tc.want, st.missingPodsToDelete(tc.pods))
		})
	}
}
