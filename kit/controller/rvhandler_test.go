package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// The handler settles the expectation of a write when the cache shows it,
// forgets it when the object goes (tombstones included), and passes every
// event on.
func TestResourceVersionHandler(t *testing.T) {
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: rv}}
	}
	var events []string
	rv := expectations.NewResourceVersion()
	h := ResourceVersionHandler(rv, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			events = append(events, map[bool]string{true: "add-initial", false: "add"}[initial])
		},
		UpdateFunc: func(_, _ any) { events = append(events, "update") },
		DeleteFunc: func(any) { events = append(events, "delete") },
	})
	pending := func() bool { ok, _ := rv.Satisfied(pod("1")); return !ok }

	rv.Expect(pod("5"))
	h.OnUpdate(pod("1"), pod("4"))
	assert.True(t, pending(), "the cache is behind our write")
	h.OnUpdate(pod("4"), pod("5"))
	assert.False(t, pending(), "the cache shows our write")

	rv.Expect(pod("7"))
	h.OnAdd(pod("7"), true)
	assert.False(t, pending())

	rv.Expect(pod("9"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("8")})
	assert.False(t, pending(), "a deleted object is expected no more")

	assert.Equal(t, []string{"update", "update", "add-initial", "delete"}, events)
}
