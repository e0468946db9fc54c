package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

func TestDependentHandler(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	q := NewQueue[types.NamespacedName]("deps", DefaultQueueOptions(), QueueConfig{Clock: clk})
	defer q.ShutDown()
	scale := expectations.NewScale[types.NamespacedName](expectations.WithClock(clk))
	rv := expectations.NewResourceVersion(expectations.WithClock(clk))
	h := DependentHandler{Owner: OwnerKind{Group: "apps.kruise.io", Kind: "CloneSet"}, Queue: q, Scale: scale, RV: rv, UpdateDelay: time.Second}.
		Handler().(cache.ResourceEventHandlerDetailedFuncs)
	owner := ref("apps.kruise.io/v1alpha1", "CloneSet", "web", true)
	key := nn("web")

	scale.Expect(key, expectations.Create, "p1")
	scale.Expect(key, expectations.Create, "p0")
	h.AddFunc(pod("p0", "1", nil, owner), true)
	assert.Equal(t, 0, q.Len(), "a replayed pod enqueues nothing")
	assert.Equal(t, []string{"p1"}, scale.Pending(key, expectations.Create), "but settles its expectation")

	h.AddFunc(pod("p1", "2", nil, owner), false)
	assert.Equal(t, 1, q.Len(), "a live creation enqueues at once")
	ok, _ := scale.Satisfied(key)
	assert.True(t, ok)
	got, _ := q.Get()
	q.Done(got)
	assert.Equal(t, key, got)

	rv.Expect(pod("p1", "5", nil, owner))
	h.UpdateFunc(pod("p1", "2", nil, owner), pod("p1", "5", nil, owner))
	ok, _ = rv.Satisfied(pod("p1", "5", nil, owner))
	assert.True(t, ok, "the update settles the resource-version expectation")
	assert.Equal(t, 0, q.Len(), "updates are gathered")
	assert.Eventually(t, func() bool { clk.Step(100 * time.Millisecond); return q.Len() == 1 }, 5*time.Second, time.Millisecond, "enqueued after UpdateDelay")
	got, _ = q.Get()
	q.Done(got)

	scale.Expect(key, expectations.Delete, "p1")
	h.DeleteFunc(cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: pod("p1", "6", nil, owner)})
	ok, _ = scale.Satisfied(key)
	assert.True(t, ok, "a tombstone settles the deletion")
	assert.Equal(t, 1, q.Len())
}
