package controller

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestForEach(t *testing.T) {
	var calls, running, peak atomic.Int32
	items := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	block := make(chan struct{})
	go func() {
		for peak.Load() < 3 {
		}
		close(block)
	}()
	err := ForEach(items, 3, func(i int) error {
		calls.Add(1)
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-block
		running.Add(-1)
		if i%4 == 0 {
			return errors.New("bad")
		}
		return nil
	})
	assert.Equal(t, int32(10), calls.Load())
	assert.Equal(t, int32(3), peak.Load(), "at most 3 at a time, and 3 reached")
	assert.ErrorContains(t, err, "bad")
	assert.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 2, "items 4 and 8 failed")
	assert.NoError(t, ForEach([]int{}, 4, func(int) error { return errors.New("never") }))
	assert.NoError(t, ForEach([]int{1}, 0, func(int) error { return nil }), "workers < 1 means 1")
}
