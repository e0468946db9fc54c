package controller

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

var cloneSetKind = OwnerKind{Group: "apps.kruise.io", Kind: "CloneSet"}

func ref(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name + "-uid"), Controller: ptr.To(controller)}
}

func pod(name, rv string, labels map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: labels, OwnerReferences: refs}}
}

type event struct {
	Key     types.NamespacedName
	Initial bool
}

type sink struct {
	mu     sync.Mutex
	events []event
}

func (s *sink) enqueue(key types.NamespacedName, initial bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event{key, initial})
}

func (s *sink) take() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	return out
}

func nn(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func TestControllerKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"v1alpha1 controller", pod("p", "1", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true)), "cs"},
		{"v1beta1 controller", pod("p", "1", nil, ref("apps.kruise.io/v1beta1", "CloneSet", "cs", true)), "cs"},
		{"non-controller owner ignored", pod("p", "1", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", false)), ""},
		{"other group ignored", pod("p", "1", nil, ref("apps/v1", "CloneSet", "cs", true)), ""},
		{"other kind ignored", pod("p", "1", nil, ref("apps.kruise.io/v1alpha1", "DaemonSet", "ds", true)), ""},
		{"other owners beside controller", pod("p", "1", nil, ref("v1", "ConfigMap", "x", false), ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true)), "cs"},
		{"orphan", pod("p", "1", nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, ok := cloneSetKind.ControllerKey(tc.pod)
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, nn(tc.want), key)
		})
	}
	cluster := OwnerKind{Group: "apps.kruise.io", Kind: "SidecarSet", ClusterScoped: true}
	key, ok := cluster.ControllerKey(pod("p", "1", nil, ref("apps.kruise.io/v1alpha1", "SidecarSet", "ss", true)))
	require.True(t, ok)
	assert.Equal(t, types.NamespacedName{Name: "ss"}, key)
}

func TestObjectOfAndKeyOfTombstones(t *testing.T) {
	p := pod("p", "1", nil)
	o, ok := ObjectOf(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p})
	require.True(t, ok)
	assert.Equal(t, "p", o.GetName())
	o, ok = ObjectOf(&cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p})
	require.True(t, ok)
	assert.Equal(t, "p", o.GetName())
	_, ok = ObjectOf("not an object")
	assert.False(t, ok)
	_, ok = ObjectOf((*corev1.Pod)(nil))
	assert.False(t, ok)
	_, ok = ObjectOf(cache.DeletedFinalStateUnknown{Key: "ns/gone"})
	assert.False(t, ok)

	key, ok := KeyOf(cache.DeletedFinalStateUnknown{Key: "ns/gone"})
	require.True(t, ok)
	assert.Equal(t, nn("gone"), key)
	key, ok = KeyOf(p)
	require.True(t, ok)
	assert.Equal(t, nn("p"), key)
	_, ok = KeyOf(42)
	assert.False(t, ok)
}

func TestOwnerHandler(t *testing.T) {
	s := &sink{}
	var orphansSeen []string
	h := OwnerHandler{Owner: cloneSetKind, Enqueue: s.enqueue, FindOwners: func(o metav1.Object) []types.NamespacedName {
		orphansSeen = append(orphansSeen, o.GetName())
		if o.GetLabels()["app"] == "web" {
			return []types.NamespacedName{nn("web-a"), nn("web-b")}
		}
		return nil
	}}
	csRef := ref("apps.kruise.io/v1alpha1", "CloneSet", "cs", true)
	cs2Ref := ref("apps.kruise.io/v1alpha1", "CloneSet", "cs2", true)
	rsRef := ref("apps/v1", "ReplicaSet", "rs", true)

	t.Run("add: initial list delayed, live immediate", func(t *testing.T) {
		h.OnAdd(pod("p", "1", nil, csRef), true)
		h.OnAdd(pod("q", "1", nil, csRef), false)
		assert.Equal(t, []event{{nn("cs"), true}, {nn("cs"), false}}, s.take())
	})
	t.Run("add: deleting pod counts as delete", func(t *testing.T) {
		p := pod("p", "1", nil, csRef)
		p.DeletionTimestamp = &metav1.Time{}
		h.OnAdd(p, false)
		assert.Equal(t, []event{{nn("cs"), false}}, s.take())
	})
	t.Run("add: foreign controller ignored, orphan offered", func(t *testing.T) {
		h.OnAdd(pod("p", "1", map[string]string{"app": "web"}, rsRef), false)
		assert.Empty(t, s.take())
		h.OnAdd(pod("o", "1", map[string]string{"app": "web"}), true)
		assert.Equal(t, []event{{nn("web-a"), true}, {nn("web-b"), true}}, s.take())
	})
	t.Run("update: resync ignored", func(t *testing.T) {
		h.OnUpdate(pod("p", "5", nil, csRef), pod("p", "5", nil, csRef))
		assert.Empty(t, s.take())
	})
	t.Run("update: same controller", func(t *testing.T) {
		h.OnUpdate(pod("p", "5", nil, csRef), pod("p", "6", nil, csRef))
		assert.Equal(t, []event{{nn("cs"), false}}, s.take())
	})
	t.Run("update: controllerRef changed enqueues old and new", func(t *testing.T) {
		h.OnUpdate(pod("p", "5", nil, csRef), pod("p", "6", nil, cs2Ref))
		assert.Equal(t, []event{{nn("cs"), false}, {nn("cs2"), false}}, s.take())
	})
	t.Run("update: released becomes orphan", func(t *testing.T) {
		orphansSeen = nil
		h.OnUpdate(pod("p", "5", map[string]string{"app": "web"}, csRef), pod("p", "6", map[string]string{"app": "web"}))
		assert.Equal(t, []event{{nn("cs"), false}, {nn("web-a"), false}, {nn("web-b"), false}}, s.take())
		assert.Equal(t, []string{"p"}, orphansSeen)
	})
	t.Run("update: orphan with unchanged labels not offered", func(t *testing.T) {
		orphansSeen = nil
		h.OnUpdate(pod("o", "5", map[string]string{"app": "web"}), pod("o", "6", map[string]string{"app": "web"}))
		assert.Empty(t, s.take())
		assert.Empty(t, orphansSeen)
		h.OnUpdate(pod("o", "6", map[string]string{"app": "web"}), pod("o", "7", map[string]string{"app": "web", "x": "y"}))
		assert.Len(t, s.take(), 2)
	})
	t.Run("update: moved to foreign controller enqueues only old", func(t *testing.T) {
		h.OnUpdate(pod("p", "5", nil, csRef), pod("p", "6", nil, rsRef))
		assert.Equal(t, []event{{nn("cs"), false}}, s.take())
	})
	t.Run("delete: object and tombstone", func(t *testing.T) {
		h.OnDelete(pod("p", "5", nil, csRef))
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("p", "5", nil, cs2Ref)})
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p"})
		h.OnDelete(pod("p", "5", nil, rsRef))
		assert.Equal(t, []event{{nn("cs"), false}, {nn("cs2"), false}}, s.take())
	})
	t.Run("no FindOwners: orphans ignored", func(t *testing.T) {
		q := NewQueue[types.NamespacedName]("h2", DefaultQueueOptions(), QueueConfig{})
		defer q.ShutDown()
		h2 := NewOwnerHandler(cloneSetKind, q, nil)
		h2.OnAdd(pod("o", "1", nil), false)
		h2.OnAdd(pod("p", "1", nil, csRef), false)
		assert.Equal(t, 1, q.Len())
	})
}

func TestKeyHandler(t *testing.T) {
	var got []types.NamespacedName
	h := KeyHandler{Enqueue: func(k types.NamespacedName) { got = append(got, k) }}
	h.OnAdd(pod("a", "1", nil), true)
	h.OnUpdate(pod("a", "1", nil), pod("a", "1", nil))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a"})
	assert.Equal(t, []types.NamespacedName{nn("a"), nn("a"), nn("a")}, got)

	// Deleted runs for deletions only, tombstones included, before the key is
	// enqueued.
	var order []string
	h = KeyHandler{
		Enqueue: func(k types.NamespacedName) { order = append(order, "enqueue "+k.Name) },
		Deleted: func(_ any, k types.NamespacedName) { order = append(order, "deleted "+k.Name) },
	}
	h.OnAdd(pod("a", "1", nil), false)
	h.OnDelete(pod("b", "1", nil))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c"})
	assert.Equal(t, []string{"enqueue a", "deleted b", "enqueue b", "deleted c", "enqueue c"}, order)
}

// OnEvery sees the new object of an update, and tombstones of deletes.
func TestOnEvery(t *testing.T) {
	var got []any
	h := OnEvery(func(obj any) { got = append(got, obj) })
	a, old, upd := pod("a", "1", nil), pod("b", "1", nil), pod("b", "2", nil)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/c"}
	h.OnAdd(a, false)
	h.OnUpdate(old, upd)
	h.OnDelete(tomb)
	assert.Equal(t, []any{a, upd, tomb}, got)
}

// OnChange passes adds, deletes and updates that changed the object on, and drops resyncs.
func TestOnChange(t *testing.T) {
	var got []any
	h := OnChange(func(obj any) { got = append(got, obj) })
	a, old, upd := pod("a", "1", nil), pod("b", "1", nil), pod("b", "2", nil)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/c"}
	h.OnAdd(a, false)
	h.OnUpdate(old, old.DeepCopy()) // a resync
	h.OnUpdate(old, upd)
	h.OnUpdate("unreadable", upd)
	h.OnDelete(tomb)
	assert.Equal(t, []any{a, upd, upd, tomb}, got)
}

func TestSelectorMatches(t *testing.T) {
	lbls := map[string]string{"app": "web"}
	assert.True(t, SelectorMatches(&metav1.LabelSelector{MatchLabels: lbls}, lbls))
	assert.False(t, SelectorMatches(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, lbls))
	assert.False(t, SelectorMatches(&metav1.LabelSelector{}, lbls), "empty selects nothing")
	assert.False(t, SelectorMatches(nil, lbls), "absent selects nothing")
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	assert.False(t, SelectorMatches(bad, lbls), "unparsable selects nothing")
}
