package nodeimage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	appslisters "github.com/flotilla-dev/flotilla/client/listers/apps/v1beta1"
)

// TestJobAlive: a job is alive when the cache holds it with the tag's UID; with caches limited to one namespace
// (--namespace), another namespace's job cannot be seen and is taken as alive, so its tags are kept.
func TestJobAlive(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	require.NoError(t, idx.Add(&appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "j", UID: "u1"}}))
	c := &Controller{jobs: appslisters.NewImagePullJobLister(idx)}
	assert.True(t, c.jobAlive("a", "j", "u1"))
	assert.False(t, c.jobAlive("a", "j", "u2"), "recreated: another UID")
	assert.False(t, c.jobAlive("b", "j", "u1"), "all namespaces cached: gone")
	c.namespace = "a"
	assert.True(t, c.jobAlive("b", "j", "u1"), "outside the cached namespace: kept")
	assert.False(t, c.jobAlive("a", "gone", "u3"))
}
