package revision

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/controller"
)

func TestListerList(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controller.OwnerUIDIndex: controller.IndexByOwnerUID})
	owned := func(name string, revision int64, uid types.UID, isController bool) *appsv1.ControllerRevision {
		r := rev(name, revision, "", 0)
		r.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: uid, Controller: ptr.To(isController),
		}}
		return r
	}
	// Owned by web but controlled by another workload: not web's.
	shared := owned("shared-1", 5, "uid-web", false)
	shared.OwnerReferences = append(shared.OwnerReferences, metav1.OwnerReference{
		APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "other", UID: "uid-other", Controller: ptr.To(true),
	})
	foreignNS := owned("web-foreign-ns", 1, "uid-web", true)
	foreignNS.Namespace = "elsewhere"
	for _, r := range []*appsv1.ControllerRevision{
		owned("web-3", 3, "uid-web", true),
		owned("web-1", 1, "uid-web", true),
		owned("web-2", 2, "uid-web", true),
		owned("web-not-controller", 4, "uid-web", false),
		owned("other-1", 1, "uid-other", true),
		rev("web-orphan", 1, "", 0),
		shared,
		foreignNS,
	} {
		require.NoError(t, indexer.Add(r))
	}

	got, err := NewLister(indexer).List(parentObj(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"web-1", "web-2", "web-3"}, names(got))

	other := &metav1.ObjectMeta{Name: "other", Namespace: "ns", UID: "uid-other"}
	got, err = NewLister(indexer).List(other)
	require.NoError(t, err)
	assert.Equal(t, []string{"other-1", "shared-1"}, names(got))

	none := &metav1.ObjectMeta{Name: "none", Namespace: "ns", UID: "uid-none"}
	got, err = NewLister(indexer).List(none)
	require.NoError(t, err)
	assert.Empty(t, got)

	// The objects are the cached ones (no copies), so callers must not write them.
	obj, _, err := indexer.GetByKey("ns/web-2")
	require.NoError(t, err)
	got, _ = NewLister(indexer).List(parentObj(nil))
	assert.Same(t, obj, got[1])
}

func TestListerNeedsIndex(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_, err := NewLister(indexer).List(parentObj(nil))
	assert.Error(t, err)
}
