package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pod is a daemon pod on node at revision hash, created at t0+age seconds;
// opts adjust it.
func pod(name, node, hash string, age int, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second)),
			Labels:            map[string]string{pub.ControllerRevisionHashLabelKey: hash}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	ready(p)
	for _, o := range opts {
		o(p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
}

func notReady(p *corev1.Pod) { p.Status.Conditions = nil }

func failed(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed; notReady(p) }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }

func preDeleting(p *corev1.Pod) {
	p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
}

var (
	run   = nodeplacement.Verdict{ShouldRun: true, ShouldContinueRunning: true}
	keep  = nodeplacement.Verdict{ShouldContinueRunning: true, Reason: "NoSchedule"}
	evict = nodeplacement.Verdict{Reason: "no match"}
)

// state builds node states: verdicts by node, pods anywhere.
func state(verdicts map[string]nodeplacement.Verdict, pods ...*corev1.Pod) []*nodeState {
	return groupByNode(verdicts, pods)
}

func allRun(nodes ...string) map[string]nodeplacement.Verdict {
	out := map[string]nodeplacement.Verdict{}
	for _, n := range nodes {
		out[n] = run
	}
	return out
}

func dsWith(mutate ...func(*appsv1alpha1.DaemonSet)) *appsv1alpha1.DaemonSet {
	ds := &appsv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns", UID: "ds-uid", Generation: 1}}
	ds.Spec.UpdateStrategy.Type = appsv1alpha1.RollingUpdateDaemonSetStrategyType
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func ru(mutate func(*appsv1alpha1.RollingUpdateDaemonSet)) func(*appsv1alpha1.DaemonSet) {
	return func(ds *appsv1alpha1.DaemonSet) {
		if ds.Spec.UpdateStrategy.RollingUpdate == nil {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{}
		}
		mutate(ds.Spec.UpdateStrategy.RollingUpdate)
	}
}

func iop(v string) *intstr.IntOrString { x := intstr.Parse(v); return &x }

func podNames(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
