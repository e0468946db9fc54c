package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

type podOpt func(*corev1.Pod)

func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

// readyAt sets Ready=True with the given transition time (zero: none).
func readyAt(at time.Time) podOpt {
	return condition(corev1.PodReady, corev1.ConditionTrue, at)
}

func notReady() podOpt { return condition(corev1.PodReady, corev1.ConditionFalse, ago(time.Hour)) }

func condition(t corev1.PodConditionType, s corev1.ConditionStatus, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: t, Status: s, LastTransitionTime: metav1.NewTime(at),
		})
	}
}

func label(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func cost(v string) podOpt { return annotation(pub.PodDeletionCostAnnotation, v) }

func lifecycle(s pub.LifecycleStateType) podOpt { return label(pub.LifecycleStateKey, string(s)) }

func restarts(counts ...int32) podOpt {
	return func(p *corev1.Pod) {
		for i, c := range counts {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
				corev1.ContainerStatus{Name: string(rune('a' + i)), RestartCount: c})
		}
	}
}

func created(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
}

func deleting() podOpt {
	return func(p *corev1.Pod) { ts := metav1.NewTime(t0); p.DeletionTimestamp = &ts }
}
