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
