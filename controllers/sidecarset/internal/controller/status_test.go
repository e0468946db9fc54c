package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
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
