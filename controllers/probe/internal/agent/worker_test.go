package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// scriptedProber returns the next scripted result and reports each call.
type scriptedProber struct {
	results []appsv1alpha1.ProbeState
	calls   chan Target
}

func (p *scriptedProber) Probe(_ context.Context, t Target) (appsv1alpha1.ProbeState, string) {
	r := p.results[0]
	if len(p.results) > 1 {
		p.results = p.results[1:]
	}
	p.calls <- t
	return r, ""
}

func workerFixture(t *testing.T, started time.Time, spec corev1.Probe, results ...appsv1alpha1.ProbeState) (*worker, *clocktesting.FakeClock, *scriptedProber) {
	clk := clocktesting.NewFakeClock(started)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Status: corev1.PodStatus{PodIP: "10.0.0.9", ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", ContainerID: "containerd://c1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}},
	})
	pr := &scriptedProber{results: results, calls: make(chan Target, 100)}
	a := &Agent{clock: clk, prober: pr, podLister: corelisters.NewPodLister(idx),
		writeCh: make(chan struct{}, 1), results: map[resultKey]result{}}
	spec.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}
	w := newWorker(a, workerKey{UID: "u", Namespace: "ns", Pod: "p", Container: "main", Probe: "m#p"}, "", spec, nil)
	return w, clk, pr
}

func (w *worker) published() appsv1alpha1.ProbeState {
	w.agent.mu.Lock()
	defer w.agent.mu.Unlock()
	return w.agent.results[resultKey{UID: "u", Probe: "m#p"}].State
}

// TestWorkerInitialDelayAndThresholds drives one worker with a fake clock:
// Unknown at start, no probe within initialDelaySeconds, Succeeded after
// successThreshold successes, Failed only after failureThreshold failures;
// the probe goes to the pod status's IP and the port of the spec.
func TestWorkerInitialDelayAndThresholds(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started, corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 2},
		ok, ok, fail, fail)
	ctx := context.Background()
	steps := []struct {
		at     time.Duration
		probed bool
		want   appsv1alpha1.ProbeState
	}{
		{0, false, unk},
		{4 * time.Second, false, unk},
		{5 * time.Second, true, unk}, // first success: below successThreshold
		{6 * time.Second, true, ok},
		{7 * time.Second, true, ok}, // first failure: below failureThreshold
		{8 * time.Second, true, fail},
	}
	for i, s := range steps {
		clk.SetTime(started.Add(s.at))
		w.probeOnce(ctx)
		select {
		case tg := <-pr.calls:
			if !s.probed {
				t.Fatalf("step %d: probed within the initial delay", i)
			}
			if tg.IP != "10.0.0.9" || tg.Port != 80 || tg.ContainerID != "c1" || tg.Timeout != time.Second {
				t.Fatalf("step %d: target %+v", i, tg)
			}
		default:
			if s.probed {
				t.Fatalf("step %d: not probed", i)
			}
		}
		if got := w.published(); got != s.want {
			t.Fatalf("step %d: published %s, want %s", i, got, s.want)
		}
	}
}

// TestWorkerZeroTimings pins kruise-daemon's reading of 0 (or unset)
// timings and thresholds, which the PodProbeMarker schema admits as
// OpenKruise's webhook does: each counts as 1 — a 1 s timeout, a probe
// every second, one result enough to publish a success or a failure (not
// the kubelet's 10 s period and 3 failures).
func TestWorkerZeroTimings(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, clk, pr := workerFixture(t, started, corev1.Probe{}, ok, fail)
	if got := w.period(); got != time.Second {
		t.Fatalf("period %v, want 1s", got)
	}
	ctx := context.Background()
	for i, want := range []appsv1alpha1.ProbeState{ok, fail} {
		clk.SetTime(started.Add(time.Duration(i+1) * time.Second))
		w.probeOnce(ctx)
		var tg Target
		select {
		case tg = <-pr.calls:
		default:
			t.Fatalf("probe %d: not probed 1 s after the container started", i)
		}
		if tg.Timeout != time.Second {
			t.Fatalf("probe %d: timeout %v, want 1s", i, tg.Timeout)
		}
		if got := w.published(); got != want {
			t.Fatalf("probe %d: published %s, want %s after one result", i, got, want)
		}
	}
}
