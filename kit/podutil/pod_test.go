package podutil

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

func TestIsActiveAndTerminating(t *testing.T) {
	for _, tc := range []struct {
		name                string
		pod                 *corev1.Pod
		active, terminating bool
	}{
		{"pending", newPod("p", phase(corev1.PodPending)), true, false},
		{"no phase", newPod("p"), true, false},
		{"running", newPod("p", phase(corev1.PodRunning)), true, false},
		{"unknown", newPod("p", phase(corev1.PodUnknown)), true, false},
		{"succeeded", newPod("p", phase(corev1.PodSucceeded)), false, false},
		{"failed", newPod("p", phase(corev1.PodFailed)), false, false},
		{"running, terminating", newPod("p", phase(corev1.PodRunning), deleting()), false, true},
		{"failed, terminating", newPod("p", phase(corev1.PodFailed), deleting()), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.active, IsActive(tc.pod), "IsActive")
			assert.Equal(t, tc.terminating, IsTerminating(tc.pod), "IsTerminating")
		})
	}
}

func TestReadiness(t *testing.T) {
	since := ago(time.Minute)
	for _, tc := range []struct {
		name            string
		pod             *corev1.Pod
		ready, runReady bool
		since           time.Time
	}{
		{"no conditions", newPod("p", phase(corev1.PodRunning)), false, false, time.Time{}},
		{"ready false", newPod("p", phase(corev1.PodRunning), notReady()), false, false, time.Time{}},
		{"ready unknown", newPod("p", phase(corev1.PodRunning), condition(corev1.PodReady, corev1.ConditionUnknown, since)), false, false, time.Time{}},
		{"only other condition true", newPod("p", phase(corev1.PodRunning), condition(corev1.ContainersReady, corev1.ConditionTrue, since)), false, false, time.Time{}},
		{"running ready", newPod("p", phase(corev1.PodRunning), condition(corev1.PodScheduled, corev1.ConditionTrue, ago(time.Hour)), readyAt(since)), true, true, since},
		{"pending but ready", newPod("p", phase(corev1.PodPending), readyAt(since)), true, false, since},
		{"ready without transition time", newPod("p", phase(corev1.PodRunning), readyAt(time.Time{})), true, true, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.ready, IsReady(tc.pod), "IsReady")
			assert.Equal(t, tc.runReady, IsRunningAndReady(tc.pod), "IsRunningAndReady")
			s, ok := ReadySince(tc.pod)
			assert.Equal(t, tc.ready, ok, "ReadySince ok")
			assert.True(t, tc.since.Equal(s), "ReadySince = %v, want %v", s, tc.since)
		})
	}
}

func TestGetCondition(t *testing.T) {
	p := newPod("p", condition("InPlaceUpdateReady", corev1.ConditionFalse, t0), readyAt(t0))
	c := GetCondition(p, "InPlaceUpdateReady")
	if assert.NotNil(t, c) {
		assert.Equal(t, corev1.ConditionFalse, c.Status)
	}
	assert.Nil(t, GetCondition(p, "KruisePodReady"))
}

func TestIsAvailable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		minReady  int32
		available bool
	}{
		{"not ready, min 0", newPod("p", notReady()), 0, false},
		{"no condition, min 0", newPod("p"), 0, false},
		{"ready now, min 0", newPod("p", readyAt(t0)), 0, true},
		{"ready now, negative min", newPod("p", readyAt(t0)), -5, true},
		{"ready 9s, min 10", newPod("p", readyAt(ago(9*time.Second))), 10, false},
		{"ready exactly 10s, min 10 (strictly longer is required)", newPod("p", readyAt(ago(10*time.Second))), 10, false},
		{"ready 11s, min 10", newPod("p", readyAt(ago(11*time.Second))), 10, true},
		{"ready in the future, min 10", newPod("p", readyAt(t0.Add(time.Second))), 10, false},
		{"ready without time, min 0", newPod("p", readyAt(time.Time{})), 0, true},
		{"ready without time, min 10", newPod("p", readyAt(time.Time{})), 10, false},
		{"not ready long ago, min 10", newPod("p", condition(corev1.PodReady, corev1.ConditionFalse, ago(time.Hour))), 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.available, IsAvailable(tc.pod, tc.minReady, t0))
		})
	}
}

func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		state  *string // nil: no label
		normal bool
	}{
		{nil, true},
		{ptr(""), true},
		{ptr(string(pub.LifecycleStateNormal)), true},
		{ptr(string(pub.LifecycleStatePreparingNormal)), false},
		{ptr(string(pub.LifecycleStatePreparingUpdate)), false},
		{ptr(string(pub.LifecycleStateUpdating)), false},
		{ptr(string(pub.LifecycleStateUpdated)), false},
		{ptr(string(pub.LifecycleStatePreparingDelete)), false},
		{ptr("Whatever"), false},
	} {
		name := "<none>"
		opts := []podOpt{phase(corev1.PodRunning), readyAt(ago(time.Minute))}
		if tc.state != nil {
			name = *tc.state
			opts = append(opts, lifecycle(pub.LifecycleStateType(*tc.state)))
		}
		t.Run(name, func(t *testing.T) {
			p := newPod("p", opts...)
			assert.Equal(t, tc.normal, IsLifecycleNormal(p), "IsLifecycleNormal")
			assert.Equal(t, tc.normal, IsWorkloadAvailable(p, 30, t0), "IsWorkloadAvailable, ready long enough")
			assert.False(t, IsWorkloadAvailable(p, 120, t0), "IsWorkloadAvailable, not ready long enough")
		})
	}
}

func ptr(s string) *string { return &s }

func TestIsSpecifiedDelete(t *testing.T) {
	assert.False(t, IsSpecifiedDelete(newPod("p")))
	assert.False(t, IsSpecifiedDelete(newPod("p", label("apps.kruise.io/specified-delete-x", "true"))))
	assert.True(t, IsSpecifiedDelete(newPod("p", label(pub.SpecifiedDeleteKey, "true"))))
	assert.True(t, IsSpecifiedDelete(newPod("p", label(pub.SpecifiedDeleteKey, "false"))), "any value")
	assert.True(t, IsSpecifiedDelete(newPod("p", label(pub.SpecifiedDeleteKey, ""))), "empty value")
}

func TestDeletionCost(t *testing.T) {
	for _, tc := range []struct {
		value *string
		want  int32
	}{
		{nil, 0},
		{ptr(""), 0},
		{ptr("0"), 0},
		{ptr("5"), 5},
		{ptr("-5"), -5},
		{ptr("100"), 100},
		{ptr("2147483647"), 2147483647},
		{ptr("-2147483648"), -2147483648},
		{ptr("-05"), -5}, // leading zeros are tolerated after '-', as upstream does
		{ptr("-0"), 0},
		{ptr("2147483648"), 0},  // overflow
		{ptr("-2147483649"), 0}, // underflow
		{ptr("99999999999999999999"), 0},
		{ptr("+5"), 0},
		{ptr("05"), 0},
		{ptr("00"), 0},
		{ptr("-"), 0},
		{ptr(" 5"), 0},
		{ptr("5 "), 0},
		{ptr("5.0"), 0},
		{ptr("1e3"), 0},
		{ptr("abc"), 0},
	} {
		name := "<none>"
		var opts []podOpt
		if tc.value != nil {
			name = "\"" + *tc.value + "\""
			opts = append(opts, cost(*tc.value))
		}
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, DeletionCost(newPod("p", opts...)))
		})
	}
}

func TestAddReadinessGateAndSetClaimVolume(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config"},
	}}}
	AddReadinessGate(pod, "A")
	AddReadinessGate(pod, "A")
	AddReadinessGate(pod, "B")
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: "A"}, {ConditionType: "B"}}, pod.Spec.ReadinessGates)

	SetClaimVolume(pod, "data", "data-web-0")
	SetClaimVolume(pod, "logs", "logs-web-0")
	require.Len(t, pod.Spec.Volumes, 3)
	assert.Equal(t, "data-web-0", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "template volume replaced in place")
	assert.Nil(t, pod.Spec.Volumes[0].EmptyDir)
	assert.Equal(t, "config", pod.Spec.Volumes[1].Name)
	assert.Equal(t, "logs-web-0", pod.Spec.Volumes[2].PersistentVolumeClaim.ClaimName)
}

// OpenKruise's CloneSet availability: Running, ready for minReadySeconds,
// lifecycle Normal, and InPlaceUpdateReady True when the pod has it.
func TestIsWorkloadAvailable(t *testing.T) {
	running := []podOpt{phase(corev1.PodRunning), readyAt(ago(time.Minute))}
	for _, tc := range []struct {
		name string
		opts []podOpt
		want bool
	}{
		{"running and ready", running, true},
		{"ready but Pending", []podOpt{phase(corev1.PodPending), readyAt(ago(time.Minute))}, false},
		{"ready but Unknown", []podOpt{phase(corev1.PodUnknown), readyAt(ago(time.Minute))}, false},
		{"InPlaceUpdateReady True", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionTrue, ago(time.Minute))), true},
		{"InPlaceUpdateReady False", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionFalse, ago(time.Second))), false},
		{"InPlaceUpdateReady Unknown", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionUnknown, ago(time.Second))), false},
		{"not ready", []podOpt{phase(corev1.PodRunning)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsWorkloadAvailable(newPod("p", tc.opts...), 0, t0))
		})
	}
}

// The ready vocabulary over the same pods: which word holds for which pod.
func TestReadyVocabulary(t *testing.T) {
	running := []podOpt{phase(corev1.PodRunning), readyAt(ago(time.Minute))}
	for _, tc := range []struct {
		name                                              string
		opts                                              []podOpt
		activeReady, workloadReady, ipuReady, ipuNotReady bool
	}{
		{"running and ready", running, true, true, true, false},
		{"running, not ready", []podOpt{phase(corev1.PodRunning), notReady()}, false, false, true, false},
		{"ready but Pending", []podOpt{phase(corev1.PodPending), readyAt(ago(time.Minute))}, false, false, true, false},
		{"running, ready, terminating", with(running, deleting()), false, true, true, false},
		{"InPlaceUpdateReady True", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionTrue, ago(time.Minute))), true, true, true, false},
		{"InPlaceUpdateReady False", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionFalse, ago(time.Second))), true, false, false, true},
		{"InPlaceUpdateReady Unknown", with(running, condition(pub.InPlaceUpdateReady, corev1.ConditionUnknown, ago(time.Second))), true, true, false, false},
		{"InPlaceUpdateReady False, not ready", []podOpt{phase(corev1.PodRunning), condition(pub.InPlaceUpdateReady, corev1.ConditionFalse, ago(time.Second))}, false, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", tc.opts...)
			assert.Equal(t, tc.activeReady, IsActiveAndReady(pod), "IsActiveAndReady")
			assert.Equal(t, tc.workloadReady, IsWorkloadReady(pod), "IsWorkloadReady")
			assert.Equal(t, tc.ipuReady, IsInPlaceUpdateReady(pod), "IsInPlaceUpdateReady")
			assert.Equal(t, tc.ipuNotReady, IsInPlaceUpdateNotReady(pod), "IsInPlaceUpdateNotReady")
		})
	}
}

func TestIsInPlaceUpdateCompleted(t *testing.T) {
	state := func(v string) podOpt { return annotation(pub.InPlaceUpdateStateKey, v) }
	const recorded = `{"revision":"r2","lastContainerStatuses":{"app":{"imageID":"sha-old"}}}`
	image := func(spec, status, id string) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "app", Image: spec})
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "app", Image: status, ImageID: id})
		}
	}
	for _, tc := range []struct {
		name string
		opts []podOpt
		want bool
	}{
		{"no update recorded", nil, true},
		{"grace without state is not looked at", []podOpt{annotation(pub.InPlaceUpdateGraceKey, "{}")}, true},
		{"undecodable state", []podOpt{state("{")}, false},
		{"container still on the old image", []podOpt{state(recorded), image("app:v2", "app:v1", "sha-old")}, false},
		{"container runs a new image", []podOpt{state(recorded), image("app:v2", "app:v2", "sha-new")}, true},
		{"recorded container without status", []podOpt{state(recorded)}, false},
		{"new image, grace pending", []podOpt{state(recorded), image("app:v2", "app:v2", "sha-new"), annotation(pub.InPlaceUpdateGraceKey, "{}")}, false},
		{"a later batch pending", []podOpt{state(`{"revision":"r2","nextContainerImages":{"app":"app:v3"}}`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsInPlaceUpdateCompleted(newPod("p", tc.opts...)))
		})
	}
}
