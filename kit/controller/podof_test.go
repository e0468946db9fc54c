package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestPodOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	for _, tc := range []struct {
		name string
		obj  any
		want *corev1.Pod
	}{
		{"pod", pod, pod},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, pod},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}, pod},
		{"other kind", node, nil},
		{"tombstone of other kind", cache.DeletedFinalStateUnknown{Key: "n", Obj: node}, nil},
		{"nil", nil, nil},
		{"typed nil", (*corev1.Pod)(nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PodOf(tc.obj)
			if ok != (tc.want != nil) || got != tc.want {
				t.Fatalf("PodOf = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
