package expectations

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestConcurrentUse hammers each store from many goroutines (run with -race):
// first every expectation is recorded concurrently and must all be pending,
// then all are observed concurrently with readers, and every owner must end up
// satisfied.
func TestConcurrentUse(t *testing.T) {
	const owners, pods, workers = 8, 200, 8
	name := func(i int) string { return fmt.Sprintf("p%d", i) }
	key := func(o int) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(o)} }
	uid := func(o, i int) types.UID { return types.UID(fmt.Sprintf("%d-%d", o, i)) }

	scale := NewScale[types.NamespacedName]()
	update := NewUpdate[types.NamespacedName]()
	rv := NewResourceVersion()

	// each runs f(owner, pod) for every pair, spread over workers, next to a
	// reader that keeps calling Satisfied and the counters.
	each := func(f func(o, i int)) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var readers sync.WaitGroup
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for o := range owners {
					scale.Satisfied(key(o))
					update.Satisfied(key(o))
					scale.Pending(key(o), Create)
					update.Pending(key(o))
					rv.Satisfied(podRV(uid(o, 0), "1"))
				}
				_ = scale.TimedOut() + update.TimedOut() + rv.TimedOut()
			}
		})
		for w := range workers {
			wg.Go(func() {
				for o := range owners {
					for i := w; i < pods; i += workers {
						f(o, i)
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		readers.Wait()
	}

	each(func(o, i int) {
		scale.Expect(key(o), Create, name(i))
		scale.Expect(key(o), Delete, name(i))
		update.Expect(key(o), "r1", name(i))
		rv.Expect(podRV(uid(o, i), "10"))
	})
	for o := range owners {
		require.Len(t, scale.Pending(key(o), Create), pods)
		require.Len(t, scale.Pending(key(o), Delete), pods)
		_, got := update.Pending(key(o))
		require.Len(t, got, pods)
		ok, _ := scale.Satisfied(key(o))
		require.False(t, ok)
		ok, _ = update.Satisfied(key(o))
		require.False(t, ok)
		for i := range pods {
			ok, _ := rv.Satisfied(podRV(uid(o, i), "9"))
			require.False(t, ok, "rv %s", uid(o, i))
		}
	}

	each(func(o, i int) {
		scale.Observe(key(o), Create, name(i))
		scale.Observe(key(o), Delete, name(i))
		update.Observe(key(o), name(i), "r1")
		rv.Observe(podRV(uid(o, i), "11"))
	})
	for o := range owners {
		ok, _ := scale.Satisfied(key(o))
		assert.True(t, ok, "scale %d", o)
		ok, _ = update.Satisfied(key(o))
		assert.True(t, ok, "update %d", o)
		for i := range pods {
			ok, _ := rv.Satisfied(podRV(uid(o, i), "9"))
			assert.True(t, ok, "rv %s", uid(o, i))
		}
	}
	assert.Zero(t, scale.TimedOut()+update.TimedOut()+rv.TimedOut())
}
