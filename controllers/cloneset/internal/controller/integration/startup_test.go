package integration

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// syncCounter is a workqueue.MetricsProvider that counts processed keys
// (one work-duration observation per sync).
type syncCounter struct{ syncs atomic.Int64 }

type noop struct{}

func (noop) Inc()                      {}
func (noop) Dec()                      {}
func (noop) Set(float64)               {}
func (noop) Observe(float64)           {}
func (c *syncCounter) Observe(float64) { c.syncs.Add(1) }

func (c *syncCounter) NewDepthMetric(string) workqueue.GaugeMetric            { return noop{} }
func (c *syncCounter) NewAddsMetric(string) workqueue.CounterMetric           { return noop{} }
func (c *syncCounter) NewLatencyMetric(string) workqueue.HistogramMetric      { return noop{} }
func (c *syncCounter) NewWorkDurationMetric(string) workqueue.HistogramMetric { return c }
func (c *syncCounter) NewRetriesMetric(string) workqueue.CounterMetric        { return noop{} }
func (c *syncCounter) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (c *syncCounter) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}

// Item 8: when the controller starts on existing CloneSets, the pods replayed
// from the informers' initial list do not requeue their CloneSet: each
// CloneSet is reconciled exactly once (from its own event, after every cache
// has synced), not once per pod nor once more after a delay as in OpenKruise.
// Pods are cached without managedFields and indexed by owner UID.
func TestStartupReconcilesEachCloneSetOnce(t *testing.T) {
	const sets, perSet = 3, 8
	h := newHarness(t)
	stop := h.startController()
	for i := range sets {
		h.create(newCloneSet(fmt.Sprintf("boot-%d", i), perSet))
	}
	for i := range sets {
		h.waitStatus(fmt.Sprintf("boot-%d", i), "settled", settled(perSet))
	}
	stop()

	counter := &syncCounter{}
	h.queueMetrics = counter
	h.startController()
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return counter.syncs.Load() >= sets, nil })
	// Longer than OpenKruise's initial delay (3 s): no second round comes.
	testenv.Consistently(t, 4*time.Second, func() error {
		if n := counter.syncs.Load(); n != sets {
			return fmt.Errorf("%d syncs for %d CloneSets", n, sets)
		}
		return nil
	})

	// The cache: managedFields stripped, pods found by owner UID.
	cs := h.get("boot-0")
	objs, err := controller.ByOwnerUID(h.ctrl.PodCache(), cs.UID)
	require.NoError(t, err)
	require.Len(t, objs, perSet)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		assert.Empty(t, p.ManagedFields, "managedFields stripped from cached pod %s", p.Name)
	}
	live := h.pods("boot-0")
	assert.NotEmpty(t, live[0].ManagedFields, "the API server does have managedFields")
}
