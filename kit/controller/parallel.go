package controller

import (
	"errors"
	"sync"
)

// ForEach calls fn for every item, at most workers at a time (at least 1),
// and returns the errors joined. A sync uses it for independent writes to
// many objects (one per pod), which would otherwise cost one API round trip
// each, back to back.
func ForEach[T any](items []T, workers int, fn func(T) error) error {
	if len(items) == 0 {
		return nil
	}
	workers = max(1, min(workers, len(items)))
	errs := make([]error, len(items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				errs[i] = fn(items[i])
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
