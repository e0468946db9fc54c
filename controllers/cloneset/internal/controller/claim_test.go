package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/workload"
)

// A pod cache the owner lookup cannot use must stop the sync: taken for "no
// pods", it would make the CloneSet create its replicas again.
func TestClaimPodsReportsAnUnusablePodIndex(t *testing.T) {
	cs := testCloneSet(1)
	p := testPod("web-a")
	p.OwnerReferences = []metav1.OwnerReference{controllerRef(cs)}

	broken := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controller.OrphanIndex: controller.IndexOrphanByNamespace})
	require.NoError(t, broken.Add(p))
	_, err := (&Controller{Base: &workload.Base{Pods: broken}}).claimPods(context.Background(), cs)
	require.Error(t, err, "owner index missing")

	ok := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		controller.OwnerUIDIndex: controller.IndexByOwnerUID, controller.OrphanIndex: controller.IndexOrphanByNamespace,
	})
	require.NoError(t, ok.Add(p))
	other := testPod("other")
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "x", UID: "uid-x", Controller: new(true)}}
	require.NoError(t, ok.Add(other))
	pods, err := (&Controller{Base: &workload.Base{Pods: ok}}).claimPods(context.Background(), cs)
	require.NoError(t, err)
	assert.Equal(t, []*corev1.Pod{p}, pods)
}
