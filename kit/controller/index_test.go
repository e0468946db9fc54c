package controller

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestIndexByOwnerUID(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{OwnerUIDIndex: IndexByOwnerUID})
	a := pod("a", "1", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true))
	b := pod("b", "1", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true), ref("v1", "ConfigMap", "cm", false))
	c := pod("c", "1", nil)
	for _, p := range []*corev1.Pod{a, b, c} {
		require.NoError(t, idx.Add(p))
	}
	got, err := ByOwnerUID(idx, "cs-uid")
	require.NoError(t, err)
	assert.ElementsMatch(t, []any{a, b}, got)
	got, err = ByOwnerUID(idx, "cm-uid")
	require.NoError(t, err)
	assert.Equal(t, []any{b}, got)
	got, err = ByOwnerUID(idx, "none")
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = IndexByOwnerUID("x")
	assert.Error(t, err)
}

func TestStripManagedFields(t *testing.T) {
	p := pod("a", "1", nil)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	out, err := StripManagedFields(p)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Pod).ManagedFields)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}
	out, err = StripManagedFields(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out)
	out, err = StripManagedFields("x")
	require.NoError(t, err)
	assert.Equal(t, "x", out)
}

// TestInformerWiring runs a real shared informer over a fake clientset: the
// transform strips managedFields, the owner index works, pre-existing pods
// are delivered as initial-list events (delayed enqueue of their owner) and
// a pod created afterwards enqueues its owner immediately.
func TestInformerWiring(t *testing.T) {
	csRef := ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true)
	existing := pod("old", "1", nil, csRef)
	existing.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	client := fake.NewClientset(existing)

	clk := testingclock.NewFakeClock(time.Now())
	q := NewQueue[types.NamespacedName]("pods", DefaultQueueOptions(), QueueConfig{Clock: clk})
	defer q.ShutDown()

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(StripManagedFields))
	inf := factory.Core().V1().Pods().Informer()
	require.NoError(t, AddOwnerUIDIndex(inf))
	_, err := inf.AddEventHandler(NewOwnerHandler(cloneSetKind, q, nil))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "%v synced", typ)
	}

	obj, exists, err := inf.GetIndexer().GetByKey("ns/old")
	require.NoError(t, err)
	require.True(t, exists)
	assert.Nil(t, obj.(*corev1.Pod).ManagedFields, "transform applied")
	owned, err := ByOwnerUID(inf.GetIndexer(), "cs-uid")
	require.NoError(t, err)
	assert.Len(t, owned, 1)

	// The replayed pod's owner is waiting for its initial delay.
	require.Eventually(t, func() bool { return q.initial.NumRequeues(nn("cs")) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 0, q.Len())

	// A live create is immediate.
	_, err = client.CoreV1().Pods("ns").Create(ctx, pod("new", "", nil, csRef), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return q.Len() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 0, q.initial.NumRequeues(nn("cs")), "live add forgot the initial back-off")
}

func TestIndexOrphanByNamespace(t *testing.T) {
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", OwnerReferences: []metav1.OwnerReference{
		{UID: "x", Controller: ptr.To(true)}}}}
	notController := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", OwnerReferences: []metav1.OwnerReference{{UID: "y"}}}}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{OrphanIndex: IndexOrphanByNamespace})
	for _, p := range []*corev1.Pod{orphan, owned, notController} {
		require.NoError(t, idx.Add(p))
	}
	got, err := idx.ByIndex(OrphanIndex, "ns")
	require.NoError(t, err)
	var names []string
	for _, o := range got {
		names = append(names, o.(*corev1.Pod).Name)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"a", "c"}, names)
}
