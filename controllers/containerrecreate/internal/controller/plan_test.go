package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			TerminationGracePeriodSeconds: ptr.To[int64](20),
			Containers: []corev1.Container{
				{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo bye"}}}}},
				{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstrName("http")}}}},
				{Name: "sidecar"},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://a1", RestartCount: 2},
			{Name: "web", ContainerID: "containerd://w1"},
			{Name: "sidecar", ContainerID: "containerd://s1"},
		}},
	}
}

func testCRR(containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Strategy: &appsv1alpha1.ContainerRecreateRequestStrategy{}},
	}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func TestStamp(t *testing.T) {
	out, msg := stamp(testCRR("app", "web", "sidecar"), testPod())
	require.Empty(t, msg)
	assert.Equal(t, map[string]string{
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   "uid-1",
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-1",
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}, out.Labels)
	assert.Equal(t, int64(20), *out.Spec.Strategy.TerminationGracePeriodSeconds, "the pod's grace period when the request sets none")
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, out.Spec.Strategy.FailurePolicy)
	app, web, side := out.Spec.Containers[0], out.Spec.Containers[1], out.Spec.Containers[2]
	assert.Equal(t, []string{"sh", "-c", "echo bye"}, app.PreStop.Exec.Command)
	assert.Nil(t, app.Ports, "ports only for an httpGet preStop")
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a1", RestartCount: 2}, app.StatusContext)
	assert.Equal(t, "/stop", web.PreStop.HTTPGet.Path)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}, web.Ports)
	assert.Nil(t, side.PreStop)
	assert.Equal(t, "containerd://s1", side.StatusContext.ContainerID)

	own := testCRR("app")
	own.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](3)
	out, _ = stamp(own, testPod())
	assert.Equal(t, int64(3), *out.Spec.Strategy.TerminationGracePeriodSeconds, "the request's own grace period is kept")
}

func TestStampRefusals(t *testing.T) {
	deleting := testPod()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	succeeded := testPod()
	succeeded.Status.Phase = corev1.PodSucceeded
	pending := testPod()
	pending.Spec.NodeName = ""
	noStatus := testPod()
	noStatus.Status.ContainerStatuses = noStatus.Status.ContainerStatuses[1:]
	noID := testPod()
	noID.Status.ContainerStatuses[0].ContainerID = ""
	preFilled := testCRR("app")
	preFilled.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old"}
	for _, tc := range []struct {
		name string
		crr  *appsv1alpha1.ContainerRecreateRequest
		pod  *corev1.Pod
		want string
	}{
		{"no pod", testCRR("app"), nil, "no found Pod named p"},
		{"deleting pod", testCRR("app"), deleting, msgInactivePod},
		{"succeeded pod", testCRR("app"), succeeded, msgInactivePod},
		{"pod on no node", testCRR("app"), pending, msgPendingPod},
		{"unknown container", testCRR("app", "nope"), testPod(), "container nope not found in Pod"},
		{"no container status", testCRR("app"), noStatus, "not found app containerStatus in Pod Status"},
		{"no container ID", testCRR("app"), noID, "no containerID in app containerStatus, maybe the container has not been initialized"},
		{"read-only fields set by the creator", preFilled, testPod(), msgReadOnlyFields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, msg := stamp(tc.crr, tc.pod)
			assert.Nil(t, out)
			assert.Equal(t, tc.want, msg)
		})
	}
}

func TestExpiry(t *testing.T) {
	stamped := func(phase appsv1alpha1.ContainerRecreateRequestPhase, deadline *int64) *appsv1alpha1.ContainerRecreateRequest {
		crr, _ := stamp(testCRR("app"), testPod())
		crr.Status.Phase = phase
		crr.Spec.ActiveDeadlineSeconds = deadline
		return crr
	}
	recreated := testPod()
	recreated.UID = "uid-2"
	gone := testPod()
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	rec := appsv1alpha1.ContainerRecreateRequestRecreating
	for _, tc := range []struct {
		name     string
		crr      *appsv1alpha1.ContainerRecreateRequest
		pod      *corev1.Pod
		at       time.Duration
		wantMsg  string
		wantNext time.Duration
	}{
		{"pod deleted", stamped(rec, nil), nil, time.Second, msgPodGone, 0},
		{"pod terminating", stamped(rec, nil), gone, time.Second, msgPodGone, 0},
		{"pod recreated under the same name", stamped(rec, nil), recreated, time.Second, msgPodGone, 0},
		{"no phase yet: wait for the agent", stamped("", nil), testPod(), 10 * time.Second, "", 50 * time.Second},
		{"no phase after a minute", stamped("", nil), testPod(), time.Minute, msgNoResponse, 0},
		{"recreating, no deadline", stamped(rec, nil), testPod(), time.Hour, "", 0},
		{"deadline ahead", stamped(rec, ptr.To[int64](30)), testPod(), 10 * time.Second, "", 20 * time.Second},
		{"deadline before the response timeout", stamped("", ptr.To[int64](5)), testPod(), time.Second, "", 4 * time.Second},
		{"deadline passed", stamped(rec, ptr.To[int64](30)), testPod(), 30 * time.Second, msgDeadline, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, next := expiry(tc.crr, tc.pod, t0.Add(tc.at))
			assert.Equal(t, tc.wantMsg, msg)
			assert.Equal(t, tc.wantNext, next)
		})
	}
}

func TestTTLLeft(t *testing.T) {
	crr := testCRR("app")
	_, ok := ttlLeft(crr, t0)
	assert.False(t, ok, "no TTL")
	crr.Spec.TTLSecondsAfterFinished = ptr.To[int32](10)
	_, ok = ttlLeft(crr, t0)
	assert.False(t, ok, "not completed")
	crr.Status.CompletionTime = &metav1.Time{Time: t0}
	left, ok := ttlLeft(crr, t0.Add(4*time.Second))
	assert.True(t, ok)
	assert.Equal(t, 6*time.Second, left)
	left, _ = ttlLeft(crr, t0.Add(11*time.Second))
	assert.Negative(t, left)
}

func TestSyncedStatuses(t *testing.T) {
	crr := testCRR("app", "web", "sidecar")
	pod := testPod()
	pod.Status.ContainerStatuses[0].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Second))}
	pod.Status.ContainerStatuses[0].Ready = true
	pod.Status.ContainerStatuses[0].RestartCount = 3
	pod.Status.ContainerStatuses[1].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Hour))}
	var got []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	require.NoError(t, json.Unmarshal([]byte(syncedStatuses(crr, pod)), &got))
	assert.Equal(t, []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
		{Name: "app", Ready: true, RestartCount: 3, ContainerID: "containerd://a1"},
	}, got, "only containers started after the request (web started before it, sidecar is not running)")
	assert.Equal(t, "[]", syncedStatuses(testCRR("app"), testPod()))
}

func TestWantsUnready(t *testing.T) {
	crr := testCRR("app")
	assert.False(t, wantsUnready(crr))
	crr.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](0)
	assert.True(t, wantsUnready(crr))
	crr.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: t0.Format(time.RFC3339)}
	assert.False(t, wantsUnready(crr))
}

func intstrName(n string) intstr.IntOrString { return intstr.FromString(n) }
