package controller

import (
	"k8s.io/client-go/tools/cache"

	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// ResourceVersionHandler keeps rv current from an informer's events — the
// expectation of a write is dropped once the cache shows that version, or
// when the object goes — and passes every event on to next, so a handler
// only says what to enqueue.
func ResourceVersionHandler(rv *expectations.ResourceVersion, next cache.ResourceEventHandler) cache.ResourceEventHandler {
	return rvHandler{rv: rv, next: next}
}

type rvHandler struct {
	rv   *expectations.ResourceVersion
	next cache.ResourceEventHandler
}

func (h rvHandler) OnAdd(obj any, isInInitialList bool) {
	h.observe(obj)
	h.next.OnAdd(obj, isInInitialList)
}

func (h rvHandler) OnUpdate(oldObj, newObj any) {
	h.observe(newObj)
	h.next.OnUpdate(oldObj, newObj)
}

func (h rvHandler) OnDelete(obj any) {
	if o, ok := ObjectOf(obj); ok {
		h.rv.Delete(o.GetUID())
	}
	h.next.OnDelete(obj)
}

func (h rvHandler) observe(obj any) {
	if o, ok := ObjectOf(obj); ok {
		h.rv.Observe(o)
	}
}
