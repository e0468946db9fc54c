package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// Status is written only when it changed (a sync per pod event would
// otherwise write the SidecarSet every time).
func TestUpdateStatusOnlyWhenChanged(t *testing.T) {
	set := testSet("side:1")
	set.Status = appsv1alpha1.SidecarSetStatus{MatchedPods: 2, UpdatedPods: 2, ReadyPods: 2, UpdatedReadyPods: 2, LatestRevision: "r", CollisionCount: ptr.To[int32](0)}
	client := fake.NewSimpleClientset(set)
	c := &Controller{client: client, rvExp: expectations.NewResourceVersion()}

	require.NoError(t, c.updateStatus(context.Background(), set, *set.Status.DeepCopy()))
	assert.Empty(t, client.Actions(), "same status: no write")

	changed := *set.Status.DeepCopy()
	changed.ReadyPods = 1
	require.NoError(t, c.updateStatus(context.Background(), set, changed))
	require.Len(t, client.Actions(), 1)
	assert.Equal(t, "update", client.Actions()[0].GetVerb())
	assert.Equal(t, "status", client.Actions()[0].GetSubresource())
}

func TestCalculateStatus(t *testing.T) {
	v1, v2 := testSet("side:1"), testSet("side:2")
	ready := injectedPod(t, "a", v1, nil)
	notReady := running(injectedPod(t, "b", v1, nil), false)
	upgradedStale, _, _ := sidecarcontrol.Upgrade(injectedPod(t, "c", v1, nil), v2, "r", false, now)
	upgradedDone := running(upgradedStale, true)
	st := calculateStatus(v2, []*corev1.Pod{ready, notReady, upgradedStale, upgradedDone}, "s-rev", 0)
	assert.Equal(t, appsv1alpha1.SidecarSetStatus{
		MatchedPods: 4, UpdatedPods: 2, ReadyPods: 2, UpdatedReadyPods: 1,
		LatestRevision: "s-rev", CollisionCount: ptr.To[int32](0),
	}, st)
}
