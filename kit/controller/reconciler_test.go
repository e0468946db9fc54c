package controller

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Reconciler syncs nothing until every informer given to WaitFor has
// synced, then drains its queue through sync.
func TestReconcilerWaitsForInformers(t *testing.T) {
	rec := &recorder{}
	o := DefaultQueueOptions()
	o.DisableInitialDelay = true
	r := NewReconciler("widgets", o, QueueConfig{}, rec.sync)
	assert.Equal(t, "widgets", r.Name())
	var synced atomic.Bool
	r.WaitFor(func() bool { return true }, synced.Load)
	r.Queue.Enqueue("a")

	stop := startLoop(t, r, 1)
	// The informer has not synced: the key stays queued.
	require.Never(t, func() bool { return rec.count() > 0 }, 300*time.Millisecond, 10*time.Millisecond)
	synced.Store(true)
	eventually(t, func() bool { return rec.count() == 1 }, "key synced once the informers have")
	stop()
}
