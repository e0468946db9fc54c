package controller

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlowStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, room   int
		wantCalls int
		wantErr   bool
	}{
		{"all succeed", 10, 100, 10, false},
		{"none", 0, 100, 0, false},
		{"first fails", 10, 0, 1, true},
		{"fails in the third batch (4 calls): 7 made, not 10", 10, 3, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			made, err := SlowStart(tc.n, 2, func(int) error {
				if calls.Add(1) > int64(tc.room) {
					return errors.New("quota")
				}
				return nil
			})
			assert.Equal(t, tc.wantCalls, made)
			assert.Equal(t, int64(tc.wantCalls), calls.Load())
			assert.Equal(t, tc.wantErr, err != nil)
		})
	}
}

// A batch of 256 never has more than inFlight calls running at once.
func TestSlowStartBoundsInFlight(t *testing.T) {
	var mu sync.Mutex
	running, peak := 0, 0
	release := make(chan struct{})
	go func() {
		for range 511 {
			release <- struct{}{}
		}
	}()
	made, err := SlowStart(511, 8, func(int) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 511, made)
	assert.LessOrEqual(t, peak, 8)
}

// SlowStartFrom begins at the given batch and reports the last batch that
// succeeded, which BatchMemory hands to the next slow start of the object;
// a failure sends the object back to batches of 1.
func TestSlowStartFromAndBatchMemory(t *testing.T) {
	done, reached, err := SlowStartFrom(100, 1, 8, func(int) error { return nil })
	assert.NoError(t, err)
	assert.Equal(t, 100, done)
	assert.Equal(t, 64, reached, "1+2+4+8+16+32 = 63, then a batch of 64 of which 37 ran")

	// Begins at 64: 100 calls in two batches instead of seven.
	var sizes []int
	var mu sync.Mutex
	cur := 0
	_, reached, err = SlowStartFrom(100, 64, 1, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		if i == 0 || i == 64 {
			sizes = append(sizes, 0)
			cur = len(sizes) - 1
		}
		sizes[cur]++
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, []int{64, 36}, sizes)
	assert.Equal(t, 128, reached)

	_, reached, err = SlowStartFrom(10, 4, 1, func(i int) error {
		if i == 5 {
			return errors.New("quota")
		}
		return nil
	})
	assert.Error(t, err)
	assert.Equal(t, 0, reached, "a failed slow start reaches nothing")

	var m BatchMemory[string]
	assert.Equal(t, 1, m.First("a"), "unknown objects start at 1")
	m.Reached("a", 64)
	assert.Equal(t, 64, m.First("a"))
	assert.Equal(t, 1, m.First("b"))
	m.Reached("a", 0)
	assert.Equal(t, 1, m.First("a"), "after a failure, back to 1")
	m.Reached("a", 32)
	m.Forget("a")
	assert.Equal(t, 1, m.First("a"))
}
