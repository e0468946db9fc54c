package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// availabilityWatcher follows the pods app=<app> from a resourceVersion
// and records the lowest number of Ready, non-terminating pods it saw.
type availabilityWatcher struct {
	mu     sync.Mutex
	ready  map[string]bool
	lowest int
	stop   func()
	done   chan struct{}
}

func (h *harness) watchAvailability(app string) *availabilityWatcher {
	h.T.Helper()
	list, err := h.Env.Kube.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	require.NoError(h.T, err)
	w := &availabilityWatcher{ready: map[string]bool{}, done: make(chan struct{})}
	for i := range list.Items {
		p := &list.Items[i]
		w.ready[p.Name] = p.DeletionTimestamp == nil && testenv.PodReady(p)
	}
	w.lowest = w.count()
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := h.Env.Kube.CoreV1().Pods(h.NS).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app, ResourceVersion: list.ResourceVersion})
	require.NoError(h.T, err)
	w.stop = func() { cancel(); wi.Stop(); <-w.done }
	go func() {
		defer close(w.done)
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.ready[p.Name] = ev.Type != watch.Deleted && p.DeletionTimestamp == nil && testenv.PodReady(p)
			w.lowest = min(w.lowest, w.count())
			w.mu.Unlock()
		}
	}()
	h.T.Cleanup(func() { w.stop() })
	return w
}

func (w *availabilityWatcher) count() int {
	n := 0
	for _, r := range w.ready {
		if r {
			n++
		}
	}
	return n
}

func (w *availabilityWatcher) Lowest() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lowest
}

// Item 4: 50 deletes and evictions fired at once against one budget of
// 50 pods allowing 5: exactly 5 pass, and a watcher never sees fewer than
// desiredAvailable (45) ready pods — the budget is taken with the PUB's
// resourceVersion as the lock.
func TestConcurrentDisruptions(t *testing.T) {
	h := newHarness(t)
	h.start()
	const n, allowed = 50, 5
	h.createPods("load", n, nil)
	h.waitReady("load", n)
	h.pubs.Create(newPub("load", "load", fmt.Sprint(allowed), totalReplicas(fmt.Sprint(n))))
	h.waitScoped()
	h.waitStatus("load", "5 allowed of 50", counts(allowed, n, n-allowed, n))
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods("load") {
			if p.Annotations["kruise.io/related-pub"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	w := h.watchAvailability("load")

	var ok, denied atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			name := fmt.Sprintf("load-%d", i)
			var err error
			if i%2 == 0 {
				err = h.deletePod(name)
			} else {
				err = h.evict(name, false)
			}
			if err == nil {
				ok.Add(1)
			} else {
				denied.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("allowed %d, denied %d", ok.Load(), denied.Load())
	assert.Equal(t, int32(allowed), ok.Load(), "exactly the budget passes")
	assert.Equal(t, int32(n-allowed), denied.Load())

	h.waitStatus("load", "settled", counts(0, n-allowed, n-allowed, n))
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(h.pods("load")) == n-allowed, nil })
	assert.GreaterOrEqual(t, w.Lowest(), n-allowed, "availability never below desiredAvailable")
}
