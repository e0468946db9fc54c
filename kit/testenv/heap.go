package testenv

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// HeapSampler records the peak of the test process's in-use heap
// (runtime.MemStats.HeapInuse) every interval until Stop: the memory an
// in-process controller needs under a test's objects, with the test's own
// clients and caches on top (an upper bound on the controller's share).
type HeapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	mu   sync.Mutex
	peak uint64
}

// SampleHeap starts a HeapSampler; it is stopped at the latest at cleanup.
func SampleHeap(t testing.TB, interval time.Duration) *HeapSampler {
	s := &HeapSampler{stop: make(chan struct{})}
	s.sample()
	s.done.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	})
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *HeapSampler) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.mu.Lock()
	s.peak = max(s.peak, m.HeapInuse)
	s.mu.Unlock()
}

// Stop ends sampling (idempotent) and returns the peak in bytes.
func (s *HeapSampler) Stop() uint64 {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.done.Wait()
	s.sample()
	return s.Peak()
}

// Peak is the largest in-use heap seen so far, in bytes.
func (s *HeapSampler) Peak() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}
