package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// WriteStatus writes only a changed status, never modifies the cached
// object, and remembers the written version.
func TestWriteStatus(t *testing.T) {
	cached := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "u", ResourceVersion: "1"},
		Status: appsv1.DeploymentStatus{Replicas: 1}}
	kube := fake.NewClientset(cached.DeepCopy())
	// The fake tracker keeps resource versions as they are; the API server bumps them.
	kube.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.UpdateAction).GetObject().(*appsv1.Deployment).DeepCopy()
		d.ResourceVersion = "2"
		return true, d, nil
	})
	client := kube.AppsV1().Deployments("ns")
	statusOf := func(d *appsv1.Deployment) *appsv1.DeploymentStatus { return &d.Status }
	rv := expectations.NewResourceVersion()
	ctx := context.Background()

	wrote, err := WriteStatus(ctx, client, cached, statusOf, appsv1.DeploymentStatus{Replicas: 1}, rv)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Empty(t, kube.Actions(), "unchanged: no request")

	wrote, err = WriteStatus(ctx, client, cached, statusOf, appsv1.DeploymentStatus{Replicas: 2}, rv)
	require.NoError(t, err)
	assert.True(t, wrote)
	require.Len(t, kube.Actions(), 1)
	assert.Equal(t, "status", kube.Actions()[0].GetSubresource())
	sent := kube.Actions()[0].(k8stesting.UpdateAction).GetObject().(*appsv1.Deployment)
	assert.Equal(t, int32(2), sent.Status.Replicas)
	assert.Equal(t, int32(1), cached.Status.Replicas, "the cached object is never modified")
	ok, _ := rv.Satisfied(cached)
	assert.False(t, ok, "the write is expected until the cache shows it")

	kube.PrependReactor("update", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("boom")
	})
	wrote, err = WriteStatus(ctx, client, cached, statusOf, appsv1.DeploymentStatus{Replicas: 3}, rv)
	assert.EqualError(t, err, "boom")
	assert.False(t, wrote)
}
