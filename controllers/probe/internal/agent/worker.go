package agent

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// workerKey names one probe of one container of one pod.
type workerKey struct {
	UID, Namespace, Pod, Container, Probe string
}

// worker runs one probe every periodSeconds.
type worker struct {
	agent  *Agent
	key    workerKey
	stopCh chan struct{}
	once   sync.Once

	mu   sync.Mutex
	ip   string
	spec corev1.Probe

	seed    *appsv1alpha1.ContainerProbeState // status entry to resume from, until the first probe
	started bool                              // tracker initialised (false again after a handler change)

	// Owned by the worker's goroutine.
	tracker     tracker
	containerID string
}

func newWorker(a *Agent, k workerKey, ip string, spec corev1.Probe, seed *appsv1alpha1.ContainerProbeState) *worker {
	return &worker{agent: a, key: k, stopCh: make(chan struct{}), ip: ip, spec: spec, seed: seed}
}

func (w *worker) stop() { w.once.Do(func() { close(w.stopCh) }) }

// update takes a new spec; a changed handler starts the probe over, as in
// OpenKruise (thresholds and timings apply from the next probe).
func (w *worker) update(ip string, spec corev1.Probe) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ip = ip
	if !reflect.DeepEqual(w.spec.ProbeHandler, spec.ProbeHandler) {
		w.started = false
		w.seed = nil
	}
	w.spec = spec
}

// current returns the worker's target and spec; the first call after the
// worker started or its handler changed also hands over the seed (the
// status entry to resume from) and reports initialised false.
func (w *worker) current() (ip string, spec corev1.Probe, initialised bool, seed *appsv1alpha1.ContainerProbeState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	initialised = w.started
	if !initialised {
		seed, w.seed = w.seed, nil
	}
	w.started = true
	return w.ip, w.spec, initialised, seed
}

func (w *worker) run(ctx context.Context) {
	period := w.period()
	ticker := w.agent.clock.NewTicker(period)
	defer func() { ticker.Stop() }()
	for {
		w.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.stopCh:
			return
		case <-ticker.C():
		}
		// A new periodSeconds applies from the next tick.
		if p := w.period(); p != period {
			ticker.Stop()
			period, ticker = p, w.agent.clock.NewTicker(p)
		}
	}
}

func (w *worker) period() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Duration(atLeastOne(w.spec.PeriodSeconds)) * time.Second
}

// probeOnce probes once and publishes the result when it changed.
func (w *worker) probeOnce(ctx context.Context) {
	pod := w.agent.pod(w.key)
	if pod == nil {
		return // not in the cache yet, or gone: the controller prunes the spec
	}
	var cs *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == w.key.Container {
			cs = &pod.Status.ContainerStatuses[i]
		}
	}
	if cs == nil {
		return
	}
	ip, spec, initialised, seed := w.current()
	now := w.agent.clock.Now()
	var startedAt time.Time
	if cs.State.Running != nil {
		startedAt = cs.State.Running.StartedAt.Time
	}
	if !initialised || cs.ContainerID != w.containerID {
		w.containerID = cs.ContainerID
		w.reset(startedAt, spec, seed)
	}
	if cs.State.Running == nil {
		w.publish(now, appsv1alpha1.ProbeFailed, fmt.Sprintf("Container(%s) is Non-running", w.key.Container))
		return
	}
	if !probeDue(now, startedAt, spec.InitialDelaySeconds) {
		return
	}
	if ip == "" {
		ip = pod.Status.PodIP
	}
	port, err := probePort(spec.ProbeHandler, podutil.Container(pod, w.key.Container))
	if err != nil {
		w.publish(now, appsv1alpha1.ProbeFailed, err.Error())
		return
	}
	timeout := time.Duration(atLeastOne(spec.TimeoutSeconds)) * time.Second
	state, msg := w.agent.prober.Probe(ctx, Target{Handler: spec.ProbeHandler, IP: ip, Port: port,
		ContainerID: runtimeContainerID(cs.ContainerID), Timeout: timeout})
	if state == execProbeSkipped {
		klog.FromContext(ctx).V(2).Info("Probe skipped", "pod", klog.KRef(w.key.Namespace, w.key.Pod), "probe", w.key.Probe, "reason", msg)
		return
	}
	if state == appsv1alpha1.ProbeUnknown {
		w.publish(now, state, msg)
		return
	}
	if w.tracker.observe(state, msg, spec.SuccessThreshold, spec.FailureThreshold) {
		w.record(now)
	}
}

// reset starts the probe for a new container: from the published state
// when it describes this container (agent restart), else from Unknown.
func (w *worker) reset(startedAt time.Time, spec corev1.Probe, seed *appsv1alpha1.ContainerProbeState) {
	// A container that is not running has no start time; its seed stays and
	// the Non-running result then changes it only if it differs.
	if seed != nil && (startedAt.IsZero() || seedValid(*seed, startedAt)) {
		w.tracker = seededTracker(*seed, spec.SuccessThreshold, spec.FailureThreshold)
		return
	}
	w.tracker = newTracker()
	if seed == nil || seed.State != appsv1alpha1.ProbeUnknown || seed.Message != "" {
		w.record(w.agent.clock.Now())
	}
}

func (w *worker) publish(now time.Time, state appsv1alpha1.ProbeState, msg string) {
	if w.tracker.publish(state, msg) {
		w.record(now)
	}
}

func (w *worker) record(now time.Time) {
	w.agent.record(resultKey{UID: w.key.UID, Probe: w.key.Probe}, result{
		Namespace: w.key.Namespace, Name: w.key.Pod,
		State: w.tracker.State, Message: w.tracker.Message, LastProbeTime: statusTime(now),
	})
}

// statusTime is t as the API stores it (RFC 3339, whole seconds), so a
// status computed here compares equal to the one read back.
func statusTime(t time.Time) metav1.Time { return metav1.NewTime(t).Rfc3339Copy() }
