package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/controller"
)

func statusSet(strategy appsv1.StatefulSetUpdateStrategyType) *appsv1beta1.StatefulSet {
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 7},
		Spec: appsv1beta1.StatefulSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{Type: strategy},
		},
	}
}

func TestCalculateStatusCounts(t *testing.T) {
	v2 := atRevision("web-v2")
	s := calculateStatus(statusInput{
		set: statusSet(appsv1.RollingUpdateStatefulSetStrategyType),
		pods: []*corev1.Pod{
			testPod(0), testPod(1, notReady), testPod(2, v2), testPod(3, v2, readySince(5*time.Second)), testPod(4, v2, terminating),
		},
		updateRevision: "web-v2", currentRevision: "web-v1", collisionCount: 2, minReadySeconds: 10, now: t0,
	})
	assert.Equal(t, int64(7), s.ObservedGeneration)
	assert.Equal(t, int32(5), s.Replicas, "every created pod")
	assert.Equal(t, int32(3), s.ReadyReplicas, "terminating pods are not ready")
	assert.Equal(t, int32(2), s.AvailableReplicas, "web-3 is not ready for 10s yet")
	assert.Equal(t, int32(2), s.CurrentReplicas)
	assert.Equal(t, int32(2), s.UpdatedReplicas, "terminating pods are not counted by revision")
	assert.Equal(t, int32(2), s.UpdatedReadyReplicas)
	assert.Equal(t, int32(1), s.UpdatedAvailableReplicas)
	assert.Equal(t, "web-v1", s.CurrentRevision, "not every pod is updated")
	assert.Equal(t, "web-v2", s.UpdateRevision)
	assert.Equal(t, int32(2), *s.CollisionCount)
	assert.Equal(t, "app=web", s.LabelSelector)
}

func TestCalculateStatusCompletesRollingUpdate(t *testing.T) {
	v2 := atRevision("web-v2")
	pods := []*corev1.Pod{testPod(0, v2), testPod(1, v2)}
	in := statusInput{set: statusSet(appsv1.RollingUpdateStatefulSetStrategyType), pods: pods, updateRevision: "web-v2", currentRevision: "web-v1", now: t0}
	s := calculateStatus(in)
	assert.Equal(t, "web-v2", s.CurrentRevision)
	assert.Equal(t, int32(2), s.CurrentReplicas)

	in.pods = []*corev1.Pod{testPod(0, v2), testPod(1, v2, notReady)}
	assert.Equal(t, "web-v1", calculateStatus(in).CurrentRevision, "waits until every pod is ready")

	in.pods = pods
	in.set = statusSet(appsv1.OnDeleteStatefulSetStrategyType)
	assert.Equal(t, "web-v1", calculateStatus(in).CurrentRevision, "OnDelete never completes a rolling update")
}

// A pod just switched to the new revision in place (InPlaceUpdateReady False) while its Ready condition still says
// True is neither ready nor updated-ready, and the rollout is not complete: its containers have not restarted yet.
func TestCalculateStatusInPlaceUpdateUnderWay(t *testing.T) {
	v2 := atRevision("web-v2")
	updating := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	in := statusInput{set: statusSet(appsv1.RollingUpdateStatefulSetStrategyType), now: t0,
		pods: []*corev1.Pod{testPod(0, v2), testPod(1, v2, updating)}, updateRevision: "web-v2", currentRevision: "web-v1"}
	s := calculateStatus(in)
	assert.Equal(t, int32(2), s.UpdatedReplicas)
	assert.Equal(t, int32(1), s.ReadyReplicas)
	assert.Equal(t, int32(1), s.UpdatedReadyReplicas)
	assert.Equal(t, "web-v1", s.CurrentRevision, "not complete while a pod's in-place update is under way")
}

func TestSetFailure(t *testing.T) {
	var conds []appsv1.StatefulSetCondition
	conds = setFailure(conds, appsv1beta1.FailedCreatePod, nil, t0)
	assert.Empty(t, conds, "a set that never failed gets no condition")

	conds = setFailure(conds, appsv1beta1.FailedCreatePod, errors.New("quota exceeded"), t0)
	require.Len(t, conds, 1)
	assert.Equal(t, corev1.ConditionTrue, conds[0].Status)
	assert.Equal(t, "quota exceeded", conds[0].Message)

	again := setFailure(conds, appsv1beta1.FailedCreatePod, errors.New("quota exceeded"), t0.Add(time.Minute))
	assert.Equal(t, conds, again, "unchanged failure: no new transition")

	conds = setFailure(conds, appsv1beta1.FailedCreatePod, nil, t0.Add(time.Hour))
	assert.Equal(t, corev1.ConditionFalse, conds[0].Status)
	assert.Equal(t, t0.Add(time.Hour), conds[0].LastTransitionTime.Time)

	conds = setFailure(conds, appsv1beta1.FailedUpdatePod, fmt.Errorf("pod web-0: %w", errInPlaceOnly), t0)
	require.Len(t, conds, 2)
	assert.Equal(t, "InPlaceOnly", conds[1].Reason)
}

// The sync returns errors.Join(scaleErr, updateErr); the loop retries only
// what is not permanent (kit/controller.Retryable).
func TestRetryable(t *testing.T) {
	inPlaceOnly := fmt.Errorf("pod web-0: %w", errInPlaceOnly)
	invalid := fmt.Errorf("%w: spec.reserveOrdinals[0]", errInvalidSpec)
	assert.True(t, controller.IsPermanent(inPlaceOnly), "reported, not retried")
	assert.True(t, controller.IsPermanent(errors.Join(invalid, nil)))
	transient := errors.New("connection refused")
	assert.ErrorIs(t, controller.Retryable(errors.Join(inPlaceOnly, transient)), transient, "a transient error next to a permanent one is retried")
}
