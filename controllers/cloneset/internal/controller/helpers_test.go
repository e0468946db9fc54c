package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// Builders shared by the unit tests of this package. Everything is relative
// to the fixed clock now.

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	currentRev = "web-5f7b8c9d4"
	updateRev  = "web-6c8d9f7b5"
)

// ios parses "3" as an int and "30%" as a string IntOrString.
func ios(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

type csOpt func(*appsv1alpha1.CloneSet)

// testCloneSet is CloneSet ns/web selecting app=web.
func testCloneSet(replicas int32, opts ...csOpt) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", Generation: 3},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}
	for _, o := range opts {
		o(cs)
	}
	return cs
}

type podOpt func(*corev1.Pod)

// testPod is a pod of the CloneSet at the update revision, scheduled on
// node-1, Running and Ready for an hour, created two hours ago: available
// whatever minReadySeconds the tests use.
func testPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         "ns",
			Name:              name,
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Labels:            map[string]string{"app": "web", pub.ControllerRevisionHashLabelKey: updateRev},
		},
		Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func atRev(rev string) podOpt {
	return func(p *corev1.Pod) { p.Labels[pub.ControllerRevisionHashLabelKey] = rev }
}

func withLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func withAnnotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func inState(s pub.LifecycleStateType) podOpt {
	return withLabel(pub.LifecycleStateKey, string(s))
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func deletionCost(v string) podOpt { return withAnnotation(pub.PodDeletionCostAnnotation, v) }

func createdAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}

func setCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, at time.Time) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = s, metav1.NewTime(at)
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(at)})
}

// readyFor: Ready (and ContainersReady) since d ago.
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		setCondition(p, corev1.ContainersReady, corev1.ConditionTrue, now.Add(-d))
		setCondition(p, corev1.PodReady, corev1.ConditionTrue, now.Add(-d))
	}
}

// notReady: Running, containers not ready.
func notReady() podOpt {
	return func(p *corev1.Pod) {
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, now.Add(-time.Minute))
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, now.Add(-time.Minute))
	}
}

// pending: scheduled but Pending, no conditions.
func pending() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = nil
	}
}

// unscheduled: Pending without a node.
func unscheduled() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		pending()(p)
	}
}

// inPlaceNotReady: mid in-place update, InPlaceUpdateReady=False (Ready left
// True, as a stale cache may still show it).
func inPlaceNotReady() podOpt {
	return func(p *corev1.Pod) {
		setCondition(p, pub.InPlaceUpdateReady, corev1.ConditionFalse, now.Add(-time.Second))
	}
}

// testState is the sync state of cs with pods, current revision currentRev
// and update revision updateRev.
func testState(cs *appsv1alpha1.CloneSet, pods ...*corev1.Pod) *syncState {
	return &syncState{
		key:  types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name},
		cs:   cs,
		now:  now,
		pods: pods,
		Revisions: workload.Revisions{
			Current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: currentRev}},
			Update:  &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: updateRev}},
		},
		deleted: sets.New[string](),
	}
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
