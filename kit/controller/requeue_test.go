package controller

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRequeueKeepsTheEarliest(t *testing.T) {
	var r Requeue
	assert.Zero(t, r.Earliest())
	r.After(0)
	r.After(-time.Second)
	assert.Zero(t, r.Earliest(), "non-positive durations ask for nothing")
	var wg sync.WaitGroup
	for _, d := range []time.Duration{5 * time.Second, time.Second, 3 * time.Second} {
		wg.Go(func() { r.After(d) })
	}
	wg.Wait()
	assert.Equal(t, time.Second, r.Earliest())
}
