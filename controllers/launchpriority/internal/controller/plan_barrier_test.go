package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/controllers/launchpriority/internal/barrier"
)

func TestPlanPod(t *testing.T) {
	ordered := map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}
	mk := func(injected bool, ready ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-1", Annotations: ordered}}
		for i, n := range []string{"a", "b"} {
			c := corev1.Container{Name: n}
			if injected {
				c.Env = []corev1.EnvVar{barrier.Env("p", -i)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
			s := corev1.ContainerStatus{Name: n}
			for _, r := range ready {
				s.Ready = s.Ready || r == n
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, s)
		}
		return p
	}
	cm := func(owner string, keys ...string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", UID: types.UID("uid-" + owner)}}},
			Data: map[string]string{}}
		for _, k := range keys {
			c.Data[k] = "true"
		}
		return c
	}
	reported := mk(false)
	reported.Status.Conditions = []corev1.PodCondition{{Type: ConditionType, Status: corev1.ConditionFalse}}
	allReady := mk(true, "a", "b")
	allReady.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		cm   *corev1.ConfigMap
		want plan
	}{
		{"webhook missed the pod: report", mk(false), nil, plan{Report: true}},
		{"already reported: nothing", reported, nil, plan{}},
		{"injected, no barrier yet: create with the first key", mk(true), nil, plan{Create: true, Open: "p_0"}},
		{"first key open, container not ready: no write", mk(true), cm("1", "p_0"), plan{}},
		{"first ready: open the last key, complete", mk(true, "a"), cm("1", "p_0"), plan{Open: "p_-1", Complete: true}},
		{"barrier of an earlier pod of the same name: stale", mk(true), cm("0", "p_0", "p_-1"), plan{Stale: true}},
		{"all containers ready: nothing", allReady, cm("1", "p_0"), plan{}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, planPod(tc.pod, tc.cm)) })
	}
}
