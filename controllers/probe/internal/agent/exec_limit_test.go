package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// blockingExec counts the ExecSync calls running at once and holds each
// until release is closed.
type blockingExec struct {
	running, peak atomic.Int32
	release       chan struct{}
}

func (b *blockingExec) ExecSync(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil, nil, nil
}

// TestExecConcurrencyCap: at most --max-concurrent-execs exec probes run at
// once on a node; the others wait for a slot within their own timeout, and
// one that finds none is skipped (an empty state: no result), not failed.
func TestExecConcurrencyCap(t *testing.T) {
	ex := &blockingExec{release: make(chan struct{})}
	pr := NewProber(limitExecs(ex, 2))
	target := func(timeout time.Duration) Target {
		return Target{Handler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, ContainerID: "c", Timeout: timeout}
	}
	var wg sync.WaitGroup
	results := make([]appsv1alpha1.ProbeState, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = pr.Probe(context.Background(), target(time.Minute))
		}()
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, error) { return ex.running.Load() == 2, nil })

	state, msg := pr.Probe(context.Background(), target(100*time.Millisecond))
	if state != execProbeSkipped || msg != errExecBusy.Error() {
		t.Fatalf("probe without a free slot = %q %q, want skipped with %q", state, msg, errExecBusy)
	}
	close(ex.release)
	wg.Wait()
	for i, r := range results {
		if r != ok {
			t.Errorf("probe %d = %s, want Succeeded once it got a slot", i, r)
		}
	}
	if p := ex.peak.Load(); p != 2 {
		t.Errorf("peak concurrent execs %d, want 2", p)
	}
	if limitExecs(nil, 2) != nil || limitExecs(ex, 0) != Execer(ex) {
		t.Error("no runtime or no cap: the execer is left as is")
	}
}

// A skipped attempt is no observation: it neither publishes nor breaks a
// run of failures toward failureThreshold.
func TestWorkerSkippedProbeKeepsState(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started, corev1.Probe{PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2},
		ok, fail, execProbeSkipped, fail)
	ctx := context.Background()
	for i, want := range []appsv1alpha1.ProbeState{ok, ok, ok, fail} {
		clk.SetTime(started.Add(time.Duration(i+1) * time.Second))
		w.probeOnce(ctx)
		<-pr.calls
		if got := w.published(); got != want {
			t.Fatalf("step %d: published %s, want %s", i, got, want)
		}
	}
}
