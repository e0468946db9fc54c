package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

// testPod is pod <set>-<ordinal> of set "web": Running and Ready since an
// hour before t0, at revision "web-v1", lifecycle Normal.
func testPod(ordinal int, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName("web", ordinal),
			Namespace: "ns",
			UID:       types.UID(podName("uid", ordinal)),
			Labels: map[string]string{
				pub.ControllerRevisionHashLabelKey: "web-v1",
				pub.LifecycleStateKey:              string(pub.LifecycleStateNormal),
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func readySince(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d)) }
}

func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func atRevision(rev string) podOpt {
	return func(p *corev1.Pod) { p.Labels[pub.ControllerRevisionHashLabelKey] = rev }
}

func specifiedDelete(p *corev1.Pod) { p.Labels[pub.SpecifiedDeleteKey] = "true" }

func podMap(pods ...*corev1.Pod) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	for _, p := range pods {
		o, ok := ordinalOf("web", p.Name)
		if !ok {
			panic(p.Name)
		}
		out[o] = p
	}
	return out
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func label(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func selector(k, v string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}
