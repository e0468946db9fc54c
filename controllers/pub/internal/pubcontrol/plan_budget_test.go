package pubcontrol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func notReady(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

func ios(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// The reference's rounding: percentages round up, for maxUnavailable and
// minAvailable alike; desiredAvailable never below 0.
func TestDesiredAvailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max, min *intstr.IntOrString
		expected int32
		want     int32
	}{
		{"maxUnavailable int", ios("2"), nil, 10, 8},
		{"maxUnavailable 25% of 10 rounds up to 3", ios("25%"), nil, 10, 7},
		{"maxUnavailable 60% of 5 (seed v0.10)", ios("60%"), nil, 5, 2},
		{"maxUnavailable above expected: 0", ios("12"), nil, 10, 0},
		{"minAvailable int", nil, ios("3"), 10, 3},
		{"minAvailable 40% of 5 (seed v0.10)", nil, ios("40%"), 5, 2},
		{"minAvailable 25% of 10 rounds up to 3", nil, ios("25%"), 10, 3},
		{"minAvailable int above expected kept", nil, ios("12"), 10, 12},
		{"nothing", nil, nil, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DesiredAvailable(policyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: tc.max, MinAvailable: tc.min}, tc.expected)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestProtectOperations(t *testing.T) {
	p := func(ann string) *policyv1alpha1.PodUnavailableBudget {
		o := &policyv1alpha1.PodUnavailableBudget{}
		if ann != "" {
			o.Annotations = map[string]string{pub.PubProtectOperationAnnotation: ann}
		}
		return o
	}
	assert.ElementsMatch(t, []policyv1alpha1.PubOperation{"DELETE", "UPDATE", "EVICT", "RESIZE"}, ProtectOperations(p(""), false).UnsortedList(), "default; resize is an update without InPlacePodVerticalScaling")
	assert.ElementsMatch(t, []policyv1alpha1.PubOperation{"DELETE", "UPDATE", "EVICT"}, ProtectOperations(p(""), true).UnsortedList())
	assert.ElementsMatch(t, []policyv1alpha1.PubOperation{"EVICT"}, ProtectOperations(p("EVICT"), false).UnsortedList())
	assert.ElementsMatch(t, []policyv1alpha1.PubOperation{"DELETE", "EVICT"}, ProtectOperations(p("DELETE, EVICT,"), false).UnsortedList())
}

func TestProtectTotalReplicas(t *testing.T) {
	for v, want := range map[string]int32{"5": 5, " 7 ": 7, "0": 0} {
		n, ok := ProtectTotalReplicas(&policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.PubProtectTotalReplicasAnnotation: v}}})
		assert.True(t, ok, v)
		assert.Equal(t, want, n, v)
	}
	for _, v := range []string{"x", "-1", "1.5"} {
		_, ok := ProtectTotalReplicas(&policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.PubProtectTotalReplicasAnnotation: v}}})
		assert.False(t, ok, v)
	}
	_, ok := ProtectTotalReplicas(&policyv1alpha1.PodUnavailableBudget{})
	assert.False(t, ok)
}

func TestCalculateStatus(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	p := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Generation: 3},
		Spec:       policyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: ios("25%")},
		Status: policyv1alpha1.PodUnavailableBudgetStatus{
			DisruptedPods:   map[string]metav1.Time{"d-fresh": at(-5 * time.Second), "d-old": at(-30 * time.Second), "gone": at(-time.Second)},
			UnavailablePods: map[string]metav1.Time{"u-fresh": at(-4 * time.Second), "u-old": at(-11 * time.Second)},
		},
	}
	terminating := readyPod("term")
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	labelled := readyPod("labelled")
	labelled.Labels = map[string]string{pub.PubUnavailablePodLabelPrefix + "x": "true"}
	pods := []*corev1.Pod{readyPod("a"), readyPod("b"), notReady(readyPod("c")), readyPod("d-fresh"), readyPod("d-old"),
		readyPod("u-fresh"), readyPod("u-old"), terminating, labelled}
	r, err := CalculateStatus(p, Observed{Pods: pods, Expected: 8, Now: now})
	require.NoError(t, err)
	// available: a, b, d-old (expired record), u-old (expired); not c, labelled, recorded, terminating.
	assert.Equal(t, policyv1alpha1.PodUnavailableBudgetStatus{
		ObservedGeneration: 3,
		DisruptedPods:      map[string]metav1.Time{"d-fresh": at(-5 * time.Second)},
		UnavailablePods:    map[string]metav1.Time{"u-fresh": at(-4 * time.Second)},
		UnavailableAllowed: 0, CurrentAvailable: 4, DesiredAvailable: 6, TotalReplicas: 8,
	}, r.Status)
	assert.Equal(t, 6*time.Second, r.Recheck, "u-fresh expires first")
	require.Len(t, r.NotDeleted, 1)
	assert.Equal(t, "d-old", r.NotDeleted[0].Name)

	r, err = CalculateStatus(p, Observed{Pods: pods, Expected: 4, Now: now})
	require.NoError(t, err)
	assert.Equal(t, int32(1), r.Status.UnavailableAllowed, "4 available, desired 4-1")
}

func TestStatusEqual(t *testing.T) {
	a := policyv1alpha1.PodUnavailableBudgetStatus{CurrentAvailable: 1, DisruptedPods: map[string]metav1.Time{}}
	b := policyv1alpha1.PodUnavailableBudgetStatus{CurrentAvailable: 1}
	assert.True(t, StatusEqual(a, b), "empty and nil maps")
	b.UnavailableAllowed = 1
	assert.False(t, StatusEqual(a, b))
}

func TestCheckAndDecrement(t *testing.T) {
	st := &policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: 1, CurrentAvailable: 5, DesiredAvailable: 4, TotalReplicas: 5}
	require.NoError(t, CheckAndDecrement("web", st, "p1", policyv1alpha1.PubDeleteOperation, now))
	assert.Equal(t, int32(0), st.UnavailableAllowed)
	assert.Contains(t, st.DisruptedPods, "p1")
	err := CheckAndDecrement("web", st, "p2", policyv1alpha1.PubEvictOperation, now)
	var denied *DeniedError
	require.ErrorAs(t, err, &denied)
	assert.Equal(t, "PodUnavailableBudget web refuses EVICT of pod p2: unavailableAllowed is 0 (currentAvailable 5, desiredAvailable 4, totalReplicas 5); pub unavailable allowed is negative", err.Error())

	st = &policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: 2}
	require.NoError(t, CheckAndDecrement("web", st, "p1", policyv1alpha1.PubUpdateOperation, now))
	assert.Contains(t, st.UnavailablePods, "p1", "updates go to unavailablePods")
	assert.Empty(t, st.DisruptedPods)

	st = &policyv1alpha1.PodUnavailableBudgetStatus{UnavailableAllowed: 5, DisruptedPods: map[string]metav1.Time{}}
	for i := range MaxRecordedPods + 1 {
		st.DisruptedPods[string(rune(i))] = metav1.Time{}
	}
	require.ErrorAs(t, CheckAndDecrement("web", st, "x", policyv1alpha1.PubDeleteOperation, now), &denied)
	assert.True(t, denied.TooMany)
}

func TestExempt(t *testing.T) {
	budget := func(desired int32, ann map[string]string, recorded ...string) *policyv1alpha1.PodUnavailableBudget {
		p := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Status: policyv1alpha1.PodUnavailableBudgetStatus{DesiredAvailable: desired, DisruptedPods: map[string]metav1.Time{}}}
		for _, r := range recorded {
			p.Status.DisruptedPods[r] = metav1.Time{}
		}
		return p
	}
	noProtect := readyPod("a")
	noProtect.Annotations = map[string]string{pub.PodPubNoProtectionAnnotation: "true"}
	inflight := readyPod("a")
	inflight.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":"2026-11-23T12:00:00Z","lastContainerStatuses":{"main":{"imageID":"old"}}}`}
	inflight.Spec.Containers[0].Image = "app:v2"
	inflight.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "app:v1", ImageID: "old"}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		p    *policyv1alpha1.PodUnavailableBudget
		op   policyv1alpha1.PubOperation
		want Exemption
	}{
		{"protected", readyPod("a"), budget(2, nil), "DELETE", NotExempt},
		{"no-protect", noProtect, budget(2, nil), "DELETE", ExemptNoProtect},
		{"not ready", notReady(readyPod("a")), budget(2, nil), "DELETE", ExemptNotAvailable},
		{"terminating (the node's final delete)", terminatingPod(), budget(2, nil), "DELETE", ExemptNotAvailable},
		{"in-place update in flight", inflight, budget(2, nil), "UPDATE", ExemptNotAvailable},
		{"desired 0", readyPod("a"), budget(0, nil), "DELETE", ExemptNoDesired},
		{"only EVICT protected", readyPod("a"), budget(2, map[string]string{pub.PubProtectOperationAnnotation: "EVICT"}), "DELETE", ExemptOperation},
		{"resize counts as update", readyPod("a"), budget(2, map[string]string{pub.PubProtectOperationAnnotation: "UPDATE"}), "RESIZE", NotExempt},
		{"recorded", readyPod("a"), budget(2, nil, "a"), "DELETE", ExemptRecorded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Exempt(tc.pod, tc.p, tc.op, false))
		})
	}
}

func TestUpdateOperation(t *testing.T) {
	base := readyPod("a")
	base.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	with := func(f func(p *corev1.Pod)) *corev1.Pod { p := base.DeepCopy(); f(p); return p }
	for _, tc := range []struct {
		name   string
		newPod *corev1.Pod
		want   policyv1alpha1.PubOperation
		ok     bool
	}{
		{"metadata only", with(func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }), "", false},
		{"image", with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }), "UPDATE", true},
		{"unavailable label", with(func(p *corev1.Pod) { p.Labels = map[string]string{pub.PubUnavailablePodLabelPrefix + "x": "1"} }), "UPDATE", true},
		{"cpu request", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}), "RESIZE", true},
		{"cpu with RestartContainer", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		}), "UPDATE", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := UpdateOperation(base, tc.newPod)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, op)
		})
	}
}

func terminatingPod() *corev1.Pod {
	p := readyPod("a")
	p.DeletionTimestamp = &metav1.Time{Time: now}
	return p
}
