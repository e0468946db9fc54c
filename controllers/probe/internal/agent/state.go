// Package agent is probe-agent's node side of PodProbeMarker: it runs the
// probes its node's NodePodProbe lists against the pods on that node and
// writes their results into the NodePodProbe status, in OpenKruise's shape.
package agent

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// tracker is one probe's state machine, Kubernetes prober style: a result
// is published only after successThreshold successes or failureThreshold
// failures in a row; until then the published state stays what it was.
type tracker struct {
	// State and Message are what the NodePodProbe status shows.
	State   appsv1alpha1.ProbeState
	Message string
	last    appsv1alpha1.ProbeState // result of the previous probe
	run     int                     // how many probes in a row returned last
}

// newTracker starts a probe whose result is not known yet (OpenKruise's
// initial value).
func newTracker() tracker { return tracker{State: appsv1alpha1.ProbeUnknown} }

// seededTracker resumes from a published state (the NodePodProbe status
// after an agent restart) as if the thresholds had just been met for it, so
// the next probe agreeing with it changes nothing and one disagreeing
// starts a fresh run instead of flipping the state at once.
func seededTracker(s appsv1alpha1.ContainerProbeState, success, failure int32) tracker {
	t := tracker{State: s.State, Message: s.Message, last: s.State}
	switch s.State {
	case appsv1alpha1.ProbeSucceeded:
		t.run = int(atLeastOne(success))
	case appsv1alpha1.ProbeFailed:
		t.run = int(atLeastOne(failure))
	}
	return t
}

// observe records one probe result and reports whether the published state
// or message changed.
func (t *tracker) observe(result appsv1alpha1.ProbeState, msg string, success, failure int32) bool {
	if result == t.last {
		t.run++
	} else {
		t.last, t.run = result, 1
	}
	threshold := atLeastOne(failure)
	if result == appsv1alpha1.ProbeSucceeded {
		threshold = atLeastOne(success)
	}
	if t.run < int(threshold) {
		return false
	}
	return t.publish(result, msg)
}

// publish sets the published state directly (container not running, probe
// reset) and reports whether it changed.
func (t *tracker) publish(state appsv1alpha1.ProbeState, msg string) bool {
	if t.State == state && t.Message == msg {
		return false
	}
	t.State, t.Message = state, msg
	return true
}

// probeDue reports whether the initial delay after the container started has
// passed. Like OpenKruise, the delay is at least one second, so a probe never
// races a container that has just started.
func probeDue(now, started time.Time, initialDelaySeconds int32) bool {
	return now.Sub(started) >= time.Duration(atLeastOne(initialDelaySeconds))*time.Second
}

// seedValid reports whether a published state still describes the running
// container: a state last probed before the container started belongs to a
// previous container, and the probe starts over.
func seedValid(s appsv1alpha1.ContainerProbeState, started time.Time) bool {
	return !s.LastProbeTime.Time.Before(started.Truncate(time.Second))
}

func atLeastOne(v int32) int32 {
	if v < 1 {
		return 1
	}
	return v
}

// result is a probe's published state and when it was last written.
type result struct {
	Namespace, Name string
	State           appsv1alpha1.ProbeState
	Message         string
	LastProbeTime   metav1.Time
}

// resultKey names one probe of one pod, as the status does.
type resultKey struct {
	UID   string
	Probe string
}
