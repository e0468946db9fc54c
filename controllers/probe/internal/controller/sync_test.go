package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
)

// A NodePodProbe the API has but the cache does not show yet (a create just
// before a restart or requeue) is not an error: the add event of the object
// brings the node back. Before, every such sync was logged as a failure and
// retried with back-off.
func TestWriteSpecCacheBehindCreate(t *testing.T) {
	existing := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}))
	c := &Controller{client: fake.NewSimpleClientset(existing), nodes: corelisters.NewNodeLister(nodes)}

	got, err := c.writeSpec(context.Background(), "node-a", nil, []appsv1alpha1.PodProbe{{Namespace: "ns", Name: "p", UID: "u"}})
	require.NoError(t, err)
	assert.Nil(t, got, "nothing to copy onto pods until the cache shows the object")
}
