package controller

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestLookup(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	assert.NoError(t, idx.Add(cm))
	lister := corelisters.NewConfigMapLister(idx)

	got, found, err := Lookup("ConfigMap", types.NamespacedName{Namespace: "ns", Name: "a"}, lister.ConfigMaps("ns").Get)
	assert.NoError(t, err)
	assert.True(t, found)
	assert.Same(t, cm, got)

	got, found, err = Lookup("ConfigMap", types.NamespacedName{Namespace: "ns", Name: "gone"}, lister.ConfigMaps("ns").Get)
	assert.NoError(t, err, "deleted: nothing to do, not an error")
	assert.False(t, found)
	assert.Nil(t, got)

	boom := errors.New("boom")
	_, found, err = Lookup("ConfigMap", types.NamespacedName{Namespace: "ns", Name: "x"}, func(string) (*corev1.ConfigMap, error) { return nil, boom })
	assert.False(t, found)
	assert.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "get ConfigMap ns/x: boom")

	nf := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	_, found, err = Lookup("ConfigMap", types.NamespacedName{Namespace: "ns", Name: "x"}, func(string) (*corev1.ConfigMap, error) { return nil, nf })
	assert.NoError(t, err)
	assert.False(t, found)
}
