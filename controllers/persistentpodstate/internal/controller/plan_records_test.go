package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

const zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"

var nodes = map[string]map[string]string{
	"n1": {zone: "z1", host: "n1", "other": "x"},
	"n2": {zone: "z2", host: "n2"},
}

func nodeLabels(name string) (map[string]string, bool) { l, ok := nodes[name]; return l, ok }

func testSpec() *appsv1alpha1.PersistentPodStateSpec {
	return &appsv1alpha1.PersistentPodStateSpec{
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{host}}}},
	}
}

type podOpt func(*corev1.Pod)

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func injected(name string) podOpt {
	return func(p *corev1.Pod) { p.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState] = name }
}
func withAnnotation(k, v string) podOpt { return func(p *corev1.Pod) { p.Annotations[k] = v } }

func pod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func state(node string) appsv1alpha1.PodState {
	l := nodes[node]
	return appsv1alpha1.PodState{NodeName: node, NodeTopologyLabels: map[string]string{zone: l[zone], host: l[host]}, Annotations: map[string]string{}}
}

func sts(replicas int32, reserved ...intstr.IntOrString) *workload {
	return &workload{meta: &metav1.ObjectMeta{Name: "web"}, apiVersion: "apps/v1", replicas: replicas, reserved: reserved}
}

func TestCalculateRecords(t *testing.T) {
	deleting := sts(3)
	deleting.meta.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name     string
		spec     *appsv1alpha1.PersistentPodStateSpec
		old      map[string]appsv1alpha1.PodState
		pods     []*corev1.Pod
		target   *workload
		want     map[string]appsv1alpha1.PodState
		missed   []missedPod
		injected bool
	}{
		{name: "ready pods are recorded with their node's values of the topology keys only",
			pods: []*corev1.Pod{pod("web-0", "n1"), pod("web-1", "n2")}, target: sts(2),
			want: map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-1": state("n2")}},
		{name: "not ready, unscheduled, or on a node the cache lacks: not recorded",
			pods: []*corev1.Pod{pod("web-0", "n1", notReady), pod("web-1", ""), pod("web-2", "gone")}, target: sts(3),
			want: map[string]appsv1alpha1.PodState{}},
		{name: "a record of the same node and keys is kept as it was (OpenKruise does not refresh node labels)",
			old:  map[string]appsv1alpha1.PodState{"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zone: "old", host: "n1"}, Annotations: map[string]string{}}},
			pods: []*corev1.Pod{pod("web-0", "n1")}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zone: "old", host: "n1"}, Annotations: map[string]string{}}}},
		{name: "a pod recreated with the webhook's constraints on another node: re-recorded, not missed",
			old:  map[string]appsv1alpha1.PodState{"web-0": state("n1")},
			pods: []*corev1.Pod{pod("web-0", "n2", injected("web"))}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-0": state("n2")}, injected: true},
		{name: "a pod recreated without the constraints on another node: missed, then re-recorded as OpenKruise does",
			old:  map[string]appsv1alpha1.PodState{"web-0": state("n1")},
			pods: []*corev1.Pod{pod("web-0", "n2")}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-0": state("n2")}, missed: []missedPod{{Pod: "web-0", RecordedNode: "n1", Node: "n2"}}},
		{name: "scale-in: records beyond replicas whose pod is gone are dropped; a pod still there keeps its record",
			old:  map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-1": state("n2"), "web-2": state("n1"), "web-3": state("n1")},
			pods: []*corev1.Pod{pod("web-0", "n1"), pod("web-2", "n1")}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-2": state("n1")}},
		{name: "scale-in skips reserved ordinals: replicas 2 with 1 reserved are ordinals 0 and 2",
			old:    map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-1": state("n2"), "web-2": state("n1"), "web-3": state("n2")},
			target: sts(2, intstr.FromInt32(1)),
			want:   map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-2": state("n1")}},
		{name: "a reserved range \"1-2\"",
			old:    map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-1": state("n2"), "web-3": state("n1"), "web-4": state("n2")},
			target: sts(2, intstr.FromString("1-2")),
			want:   map[string]appsv1alpha1.PodState{"web-0": state("n1"), "web-3": state("n1")}},
		{name: "retention WhenDeleted keeps records on scale-in",
			spec: func() *appsv1alpha1.PersistentPodStateSpec {
				s := testSpec()
				s.PersistentPodStateRetentionPolicy = appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
				return s
			}(),
			old: map[string]appsv1alpha1.PodState{"web-5": state("n1")}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-5": state("n1")}},
		{name: "a name without an ordinal is kept",
			old: map[string]appsv1alpha1.PodState{"odd-name": state("n1")}, target: sts(0),
			want: map[string]appsv1alpha1.PodState{"odd-name": state("n1")}},
		{name: "StatefulSet gone: no records", old: map[string]appsv1alpha1.PodState{"web-0": state("n1")}, target: nil},
		{name: "StatefulSet being deleted: no records", old: map[string]appsv1alpha1.PodState{"web-0": state("n1")}, target: deleting},
		{name: "annotations recorded",
			spec: func() *appsv1alpha1.PersistentPodStateSpec {
				s := testSpec()
				s.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: "ip"}, {Key: "absent"}}
				return s
			}(),
			pods: []*corev1.Pod{pod("web-0", "n1", withAnnotation("ip", "10.0.0.1"))}, target: sts(1),
			want: map[string]appsv1alpha1.PodState{"web-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{zone: "z1", host: "n1"},
				Annotations: map[string]string{"ip": "10.0.0.1"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			if s == nil {
				s = testSpec()
			}
			got := calculateRecords(recordInput{ppsName: "web", spec: s, old: tc.old, pods: tc.pods, nodeLabels: nodeLabels, target: tc.target})
			if tc.want == nil {
				assert.Nil(t, got.states)
			} else {
				assert.Equal(t, tc.want, got.states)
			}
			assert.Equal(t, tc.missed, got.missed)
			assert.Equal(t, tc.injected, got.injected)
		})
	}
}

func TestInReplicas(t *testing.T) {
	for _, tc := range []struct {
		ordinal  int
		replicas int32
		reserved []intstr.IntOrString
		want     bool
	}{
		{0, 1, nil, true}, {1, 1, nil, false}, {0, 0, nil, false},
		{1, 3, []intstr.IntOrString{intstr.FromInt32(1)}, false},
		{3, 3, []intstr.IntOrString{intstr.FromInt32(1)}, true},
		{4, 3, []intstr.IntOrString{intstr.FromInt32(1)}, false},
		{5, 3, []intstr.IntOrString{intstr.FromString("1-3")}, true},
		{6, 3, []intstr.IntOrString{intstr.FromString("1-3")}, false},
		{2, 3, []intstr.IntOrString{intstr.FromString("junk")}, true},
	} {
		assert.Equal(t, tc.want, inReplicas(tc.ordinal, tc.replicas, tc.reserved), "ordinal %d of %d reserved %v", tc.ordinal, tc.replicas, tc.reserved)
	}
}

func TestCalculateStatus(t *testing.T) {
	now := metav1.Now()
	old := &appsv1alpha1.PersistentPodStateStatus{Conditions: []metav1.Condition{{Type: "WebhookInScope", Status: metav1.ConditionTrue}}}
	st := calculateStatus(old, 3, records{states: map[string]appsv1alpha1.PodState{}}, now)
	assert.Nil(t, st.PodStates, "no records: omitted")
	assert.Equal(t, int64(3), st.ObservedGeneration)
	assert.Len(t, st.Conditions, 1, "other conditions kept, none added when nothing was seen")

	st = calculateStatus(old, 3, records{missed: []missedPod{{Pod: "web-0", RecordedNode: "n1", Node: "n2"}}}, now)
	c := findCondition(st.Conditions, ConditionInjected)
	if assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		assert.Equal(t, ReasonNotInjected, c.Reason)
		assert.Contains(t, c.Message, "web-0 runs on n2, recorded on n1")
	}
	st = calculateStatus(&st, 3, records{}, now)
	assert.Equal(t, metav1.ConditionFalse, findCondition(st.Conditions, ConditionInjected).Status, "kept until a pod is seen injected")
	st = calculateStatus(&st, 3, records{injected: true}, now)
	assert.Equal(t, metav1.ConditionTrue, findCondition(st.Conditions, ConditionInjected).Status)
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
