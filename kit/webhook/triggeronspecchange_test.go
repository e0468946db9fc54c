package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TriggerOnSpecChange triggers on every add and delete (tombstones
// included), and on an update only when the generation changes (spec) or
// the deletion starts; status, label or resourceVersion changes alone do
// not move a scope.
func TestTriggerOnSpecChange(t *testing.T) {
	now := metav1.Now()
	obj := func(gen int64, rv string, mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", Generation: gen, ResourceVersion: rv}}
		for _, m := range mutate {
			m(o)
		}
		return o
	}
	deleting := func(o *corev1.ConfigMap) { o.DeletionTimestamp = &now }
	labelled := func(o *corev1.ConfigMap) { o.Labels = map[string]string{"a": "b"} }
	finalizer := func(o *corev1.ConfigMap) { o.Finalizers = []string{"x"} }

	cases := []struct {
		name string
		send func(h cache.ResourceEventHandler)
		want int
	}{
		{"add", func(h cache.ResourceEventHandler) { h.OnAdd(obj(1, "1"), false) }, 1},
		{"add from the initial list", func(h cache.ResourceEventHandler) { h.OnAdd(obj(1, "1"), true) }, 1},
		{"delete", func(h cache.ResourceEventHandler) { h.OnDelete(obj(1, "1")) }, 1},
		{"delete seen as a tombstone", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/o", Obj: obj(1, "1")})
		}, 1},
		{"spec change (generation)", func(h cache.ResourceEventHandler) { h.OnUpdate(obj(1, "1"), obj(2, "2")) }, 1},
		{"status-only write (same generation)", func(h cache.ResourceEventHandler) { h.OnUpdate(obj(1, "1"), obj(1, "2")) }, 0},
		{"labels only", func(h cache.ResourceEventHandler) { h.OnUpdate(obj(1, "1"), obj(1, "2", labelled)) }, 0},
		{"resync (same object)", func(h cache.ResourceEventHandler) { h.OnUpdate(obj(1, "1"), obj(1, "1")) }, 0},
		{"deletion starts", func(h cache.ResourceEventHandler) {
			h.OnUpdate(obj(1, "1", finalizer), obj(1, "2", finalizer, deleting))
		}, 1},
		{"deletion starts with a generation bump", func(h cache.ResourceEventHandler) {
			h.OnUpdate(obj(1, "1", finalizer), obj(2, "2", finalizer, deleting))
		}, 1},
		{"finalizer removed while deleting", func(h cache.ResourceEventHandler) {
			h.OnUpdate(obj(2, "2", finalizer, deleting), obj(2, "3", deleting))
		}, 0},
		{"not an object: triggers", func(h cache.ResourceEventHandler) { h.OnUpdate("old", obj(1, "1")) }, 1},
		{"new not an object: triggers", func(h cache.ResourceEventHandler) { h.OnUpdate(obj(1, "1"), nil) }, 1},
		{"add then status write then spec change", func(h cache.ResourceEventHandler) {
			h.OnAdd(obj(1, "1"), false)
			h.OnUpdate(obj(1, "1"), obj(1, "2"))
			h.OnUpdate(obj(1, "2"), obj(2, "3"))
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			c.send(TriggerOnSpecChange(func() { n++ }))
			assert.Equal(t, c.want, n)
		})
	}
}
