package testenv

import (
	"errors"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	k8stesting "k8s.io/client-go/testing"
)

// PodCreates counts the pod creations a fake clientset answered.
type PodCreates struct {
	n     atomic.Int64
	mu    sync.Mutex
	names sets.Set[string]
}

// AnswerPodCreates makes fake answer pod creations without storing them —
// the fake's tracker and field manager would cost more than the sync a
// test measures, and its informer must not see them — and fail every one
// past limit, which stops a controller that knows no burst long before it
// creates millions.
func AnswerPodCreates(fake interface {
	PrependReactor(verb, resource string, fn k8stesting.ReactionFunc)
}, limit int64) *PodCreates {
	pc := &PodCreates{names: sets.New[string]()}
	fake.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if pc.n.Add(1) > limit {
			return true, nil, errors.New("test: too many pod creations")
		}
		obj := a.(k8stesting.CreateAction).GetObject()
		pc.mu.Lock()
		pc.names.Insert(obj.(metav1.Object).GetName())
		pc.mu.Unlock()
		return true, obj, nil
	})
	return pc
}

// Count is how many creations were asked for (refused ones included).
func (pc *PodCreates) Count() int64 { return pc.n.Load() }

// Names are the names of the pods created, a copy.
func (pc *PodCreates) Names() sets.Set[string] {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.names.Clone()
}
