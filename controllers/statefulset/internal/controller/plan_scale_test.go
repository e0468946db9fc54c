package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1 "k8s.io/api/apps/v1"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func TestPlanScale(t *testing.T) {
	type want struct {
		create     []int
		recreate   []string
		condemn    []string
		waitingFor string
	}
	for _, tc := range []struct {
		name           string
		slots          []int
		pods           []*corev1.Pod
		parallel       bool
		maxUnavailable int
		minReady       int32
		want           want
	}{
		{name: "ordered: creates the first missing pod only", slots: []int{0, 1, 2},
			want: want{create: []int{0}}},
		{name: "ordered: next pod once its predecessor is ready", slots: []int{0, 1, 2}, pods: []*corev1.Pod{testPod(0)},
			want: want{create: []int{1}}},
		{name: "ordered: waits for a predecessor that is not ready", slots: []int{0, 1, 2}, pods: []*corev1.Pod{testPod(0, notReady)},
			want: want{waitingFor: "web-0"}},
		{name: "ordered: waits out minReadySeconds", slots: []int{0, 1}, minReady: 30, pods: []*corev1.Pod{testPod(0, readySince(10*time.Second))},
			want: want{waitingFor: "web-0"}},
		{name: "ordered: ready long enough", slots: []int{0, 1}, minReady: 30, pods: []*corev1.Pod{testPod(0, readySince(31*time.Second))},
			want: want{create: []int{1}}},
		{name: "ordered: failed pod is deleted to be recreated, nothing else", slots: []int{0, 1, 2},
			pods: []*corev1.Pod{testPod(0, phase(corev1.PodFailed))}, want: want{recreate: []string{"web-0"}}},
		{name: "ordered: waits for a terminating pod in a slot", slots: []int{0, 1}, pods: []*corev1.Pod{testPod(0, terminating)},
			want: want{waitingFor: "web-0"}},
		{name: "ordered: scale-down deletes the highest ordinal first, one at a time", slots: []int{0},
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2)}, want: want{condemn: []string{"web-2"}}},
		{name: "ordered: scale-down waits for the terminating one", slots: []int{0},
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2, terminating)}, want: want{waitingFor: "web-2"}},
		{name: "ordered: scale-down halts on an unhealthy condemned pod", slots: []int{0},
			pods: []*corev1.Pod{testPod(0), testPod(1, notReady), testPod(2)}, want: want{waitingFor: "web-1"}},
		{name: "ordered: scale-down waits for unhealthy slots first", slots: []int{0},
			pods: []*corev1.Pod{testPod(0, notReady), testPod(1)}, want: want{waitingFor: "web-0"}},
		{name: "ordered: reserved ordinal skipped", slots: []int{0, 2}, pods: []*corev1.Pod{testPod(0)},
			want: want{create: []int{2}}},
		{name: "ordered: a pod on a newly reserved ordinal is condemned", slots: []int{0, 2},
			pods: []*corev1.Pod{testPod(0), testPod(1), testPod(2)}, want: want{condemn: []string{"web-1"}}},
		{name: "parallel: everything at once", slots: []int{0, 1, 2, 3}, parallel: true,
			pods: []*corev1.Pod{testPod(1, notReady), testPod(2, phase(corev1.PodSucceeded)), testPod(5), testPod(6, terminating), testPod(4)},
			want: want{create: []int{0, 3}, recreate: []string{"web-2"}, condemn: []string{"web-5", "web-4"}}},
		{name: "parallel: maxUnavailable bounds creations", slots: []int{0, 1, 2, 3, 4}, parallel: true, maxUnavailable: 2,
			want: want{create: []int{0, 1}}},
		{name: "parallel: unavailable pods use the budget", slots: []int{0, 1, 2, 3, 4}, parallel: true, maxUnavailable: 2,
			pods: []*corev1.Pod{testPod(0, notReady), testPod(1)}, want: want{create: []int{2}}},
		{name: "parallel: no budget left", slots: []int{0, 1, 2}, parallel: true, maxUnavailable: 1,
			pods: []*corev1.Pod{testPod(0, notReady)}, want: want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planScale(scaleInput{slots: tc.slots, pods: podMap(tc.pods...), monotonic: !tc.parallel,
				maxUnavailable: tc.maxUnavailable, minReadySeconds: tc.minReady, now: t0})
			assert.Equal(t, tc.want.create, got.create, "create")
			assert.Equal(t, tc.want.recreate, namesOrNil(got.recreate), "recreate")
			assert.Equal(t, tc.want.condemn, namesOrNil(got.condemn), "condemn")
			assert.Equal(t, tc.want.waitingFor, got.waitingFor, "waitingFor")
		})
	}
}

func namesOrNil(pods []*corev1.Pod) []string {
	if len(pods) == 0 {
		return nil
	}
	return names(pods)
}

func TestScaleMaxUnavailable(t *testing.T) {
	set := func(policy appsv1.PodManagementPolicyType, v *intstr.IntOrString) *appsv1beta1.StatefulSet {
		return &appsv1beta1.StatefulSet{Spec: appsv1beta1.StatefulSetSpec{PodManagementPolicy: policy,
			ScaleStrategy: &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: v}}}
	}
	two, pct, tiny := intstr.FromInt32(2), intstr.FromString("50%"), intstr.FromString("1%")
	assert.Equal(t, 2, scaleMaxUnavailable(set(appsv1.ParallelPodManagement, &two), 10))
	assert.Equal(t, 5, scaleMaxUnavailable(set(appsv1.ParallelPodManagement, &pct), 10))
	assert.Equal(t, 1, scaleMaxUnavailable(set(appsv1.ParallelPodManagement, &tiny), 10), "rounded down, at least 1")
	assert.Equal(t, 0, scaleMaxUnavailable(set(appsv1.OrderedReadyPodManagement, &two), 10), "Parallel only")
	assert.Equal(t, 0, scaleMaxUnavailable(set(appsv1.ParallelPodManagement, nil), 10), "unset: no limit")
}

func TestAvailableIn(t *testing.T) {
	assert.Zero(t, availableIn(testPod(0), 0, t0), "no minReadySeconds")
	assert.Zero(t, availableIn(testPod(0, notReady), 30, t0), "not Ready")
	assert.Zero(t, availableIn(testPod(0, readySince(31*time.Second)), 30, t0), "available already")
	assert.Equal(t, 20*time.Second+100*time.Millisecond, availableIn(testPod(0, readySince(10*time.Second)), 30, t0))
}
