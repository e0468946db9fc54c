package spread

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func pod(name, ws, subset string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ws != "" {
		p.Annotations = map[string]string{AnnotationKey: Injected{Name: ws, Subset: subset}.Encode()}
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func terminating(p *corev1.Pod) { now := metav1.NewTime(t0); p.DeletionTimestamp = &now }

func TestGroupBySubset(t *testing.T) {
	ws := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws"}, Spec: appsv1alpha1.WorkloadSpreadSpec{Subsets: []appsv1alpha1.WorkloadSpreadSubset{{Name: "a"}, {Name: "b"}}}}
	got := GroupBySubset(ws, []*corev1.Pod{pod("1", "ws", "a"), pod("2", "ws", "b"), pod("3", "", ""), pod("4", "other", "a"), pod("5", "ws", "gone")})
	names := func(ps []*corev1.Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return
	}
	assert.Equal(t, []string{"1"}, names(got["a"]))
	assert.Equal(t, []string{"2"}, names(got["b"]))
	assert.Equal(t, []string{"3", "4", "5"}, names(got[FakeSubsetName]))
}

func TestSubsetStatus(t *testing.T) {
	now := t0.Add(time.Minute)
	ten := intstr.FromInt32(10)
	recent, stale := metav1.NewTime(now.Add(-5*time.Second)), metav1.NewTime(now.Add(-time.Minute))
	cases := []struct {
		name                          string
		max                           *intstr.IntOrString
		pods                          []*corev1.Pod
		old                           *appsv1alpha1.WorkloadSpreadSubsetStatus
		replicas, missing             int32
		creating, deleting            []string
		expiredCreating, expiredDelet []string
	}{
		{name: "active pods count, terminating do not", max: &ten, pods: []*corev1.Pod{pod("p1", "ws", "a"), pod("p2", "ws", "a"), pod("p3", "ws", "a", terminating)},
			replicas: 2, missing: 8},
		{name: "unlimited", pods: []*corev1.Pod{pod("p1", "ws", "a")}, replicas: 1, missing: -1},
		{name: "creating pod not seen yet holds a place until its timeout", max: &ten, pods: []*corev1.Pod{pod("p1", "ws", "a")},
			old:      &appsv1alpha1.WorkloadSpreadSubsetStatus{CreatingPods: map[string]metav1.Time{"p1": recent, "p2": recent, "p3": stale}},
			replicas: 1, missing: 8, creating: []string{"p2"}, expiredCreating: []string{"p3"}},
		{name: "deleting pod still there gives its place back until its timeout", max: &ten,
			pods:     []*corev1.Pod{pod("p1", "ws", "a"), pod("p2", "ws", "a"), pod("p3", "ws", "a")},
			old:      &appsv1alpha1.WorkloadSpreadSubsetStatus{DeletingPods: map[string]metav1.Time{"p1": recent, "p2": stale, "gone": recent}},
			replicas: 3, missing: 8, deleting: []string{"p1"}, expiredDelet: []string{"p2"}},
		{name: "generateName pod found by its uid", max: &ten,
			pods: []*corev1.Pod{pod("p-abc", "", "", func(p *corev1.Pod) {
				p.Annotations = map[string]string{AnnotationKey: Injected{Name: "ws", Subset: "a", UID: "u1"}.Encode()}
			})},
			old:      &appsv1alpha1.WorkloadSpreadSubsetStatus{CreatingPods: map[string]metav1.Time{"u1": recent}},
			replicas: 1, missing: 9},
	}
	keys := func(m map[string]metav1.Time) (out []string) {
		for k := range m {
			out = append(out, k)
		}
		return
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := SubsetStatus(&appsv1alpha1.WorkloadSpreadSubset{Name: "a", MaxReplicas: tc.max}, tc.pods, tc.old, 10, now)
			require.NoError(t, err)
			assert.Equal(t, tc.replicas, r.Status.Replicas, "replicas")
			assert.Equal(t, tc.missing, r.Status.MissingReplicas, "missingReplicas")
			assert.ElementsMatch(t, tc.creating, keys(r.Status.CreatingPods))
			assert.ElementsMatch(t, tc.deleting, keys(r.Status.DeletingPods))
			assert.ElementsMatch(t, tc.expiredCreating, r.ExpiredCreating)
			assert.ElementsMatch(t, tc.expiredDelet, r.ExpiredDeleting)
			if len(tc.creating)+len(tc.deleting) > 0 {
				assert.Greater(t, r.Next, time.Duration(0))
			}
		})
	}
}

func TestDeletionCosts(t *testing.T) {
	three := intstr.FromInt32(3)
	ws := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws"}, Spec: appsv1alpha1.WorkloadSpreadSpec{Subsets: []appsv1alpha1.WorkloadSpreadSubset{
		{Name: "fixed", MaxReplicas: &three}, {Name: "elastic"}}}}
	by := GroupBySubset(ws, []*corev1.Pod{pod("f1", "ws", "fixed"), pod("f2", "ws", "fixed"), pod("f3", "ws", "fixed"),
		pod("f4", "ws", "fixed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		pod("e1", "ws", "elastic"), pod("x", "", "")})
	got := DeletionCosts(ws, by, 10, t0)
	assert.Equal(t, map[string]string{"f1": "200", "f2": "200", "f3": "200", "f4": "-100", "e1": "100", "x": "-300"}, got,
		"fixed subset over its limit: the pending pod beyond it goes first; elastic before fixed; pods in no subset first of all")
	assert.True(t, CostPatchNeeded(pod("a", "", ""), "100"))
	assert.False(t, CostPatchNeeded(pod("a", "", ""), "0"))
	assert.False(t, CostPatchNeeded(pod("a", "", "", func(p *corev1.Pod) { p.Annotations = map[string]string{DeletionCostKey: "100"} }), "100"))
}

func TestMissed(t *testing.T) {
	ws := &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws"}}
	late := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour)) }
	got := Missed(ws, []*corev1.Pod{pod("before", "", ""), pod("placed", "ws", "a", late), pod("missed", "", "", late), pod("gone", "", "", late, terminating)}, t0.Add(time.Minute))
	assert.Equal(t, []string{"missed"}, got)
}

func TestReschedule(t *testing.T) {
	stuck := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	placed := func(p *corev1.Pod) { p.Spec.NodeName = "n" }
	young := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(50 * time.Second)) }
	now := t0.Add(time.Minute)
	out, next := Unscheduled([]*corev1.Pod{pod("old", "", "", stuck), pod("young", "", "", stuck, young), pod("ok", "", "", placed)}, 30*time.Second, now)
	require.Len(t, out, 1)
	assert.Equal(t, "old", out[0].Name)
	assert.Equal(t, 20*time.Second, next)

	s := &appsv1alpha1.WorkloadSpreadSubsetStatus{Name: "a"}
	_, rec := Schedulability(s, true, now)
	assert.False(t, rec)
	assert.False(t, Schedulable(s))
	wait, rec := Schedulability(s, false, now.Add(time.Minute))
	assert.False(t, rec)
	assert.Equal(t, MaxScheduledFailedDuration-time.Minute, wait)
	_, rec = Schedulability(s, false, now.Add(MaxScheduledFailedDuration))
	assert.True(t, rec, "recovers after MaxScheduledFailedDuration")
	assert.True(t, Schedulable(s))
	RemoveSchedulable(s)
	assert.Nil(t, s.Conditions)

	ws := &appsv1alpha1.WorkloadSpread{}
	assert.Zero(t, RescheduleSeconds(ws))
	v := int32(30)
	ws.Spec.ScheduleStrategy = appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
		Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: &v}}
	assert.Equal(t, int32(30), RescheduleSeconds(ws))
}
