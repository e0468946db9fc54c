package barrier

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestNextKey(t *testing.T) {
	// Three containers of priorities 0, -1, -2 (Ordered): a, b, c.
	three := func(ready ...string) *corev1.Pod {
		p := pod(ordered, container("a", Env("p", 0)), container("b", Env("p", -1)), container("c", Env("p", -2)))
		for _, n := range []string{"a", "b", "c"} {
			s := corev1.ContainerStatus{Name: n}
			for _, r := range ready {
				s.Ready = s.Ready || r == n
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
		}
		return p
	}
	keys := func(ks ...string) map[string]string {
		m := map[string]string{}
		for _, k := range ks {
			m[k] = "true"
		}
		return m
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		have map[string]string
		want Next
	}{
		{"new barrier: the first container's key", three(), nil, Next{Open: "p_0"}},
		{"first open, not ready yet: nothing to write", three(), keys("p_0"), Next{}},
		{"first ready: the second's key", three("a"), keys("p_0"), Next{Open: "p_-1"}},
		{"second open, not ready: nothing", three("a"), keys("p_0", "p_-1"), Next{}},
		{"two ready: the last key, then complete", three("a", "b"), keys("p_0", "p_-1"), Next{Open: "p_-2", Complete: true}},
		{"lowest already open: complete, no write", three("a"), keys("p_0", "p_-1", "p_-2"), Next{Complete: true}},
		{"all ready: complete", three("a", "b", "c"), keys("p_0"), Next{Complete: true}},
		{"ready out of order (restart): the highest not ready", three("b"), keys("p_0", "p_-1"), Next{}},
		{"same priority shares one key", pod(nil, container("a", Env("p", 5)), container("b", Env("p", 5)), container("c", Env("p", 1))),
			nil, Next{Open: "p_5"}},
		{"container without a barrier (injected later) is not waited on",
			pod(nil, container("a", Env("p", 1)), container("side")), keys("p_1"), Next{Complete: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, NextKey(tc.pod, tc.have)) })
	}
}
