package agent

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
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

// worker is one probe, run every periodSeconds by the agent's scheduler.
type worker struct {
	agent   *Agent
	key     workerKey
	stopped atomic.Bool

	mu   sync.Mutex
	ip   string
	spec corev1.Probe

	seed    *appsv1alpha1.ContainerProbeState // status entry to resume from, until the first probe
	started bool                              // tracker initialised (false again after a handler change)

	// Owned by the worker's run in flight (the scheduler runs one at a time).
	tracker     tracker
	containerID string
}

func newWorker(a *Agent, k workerKey, ip string, spec corev1.Probe, seed *appsv1alpha1.ContainerProbeState) *worker {
	return &worker{agent: a, key: k, ip: ip, spec: spec, seed: seed}
}

// stop ends the worker's probes: the scheduler drops it.
func (w *worker) stop() { w.stopped.Store(true) }

func (w *worker) isStopped() bool { return w.stopped.Load() }

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

// period is the wait between two probes; a new periodSeconds applies from the next one.
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
