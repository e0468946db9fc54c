package agent

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// desiredStatus is the NodePodProbe status after applying results to the
// current one: entries of pods or probes the spec no longer lists are
// dropped, results overwrite their entry (lastTransitionTime moves to now
// only when the state changes), new ones are appended. Entries without a
// result stay as they are, which is what keeps them across agent restarts.
func desiredStatus(npp *appsv1alpha1.NodePodProbe, results map[resultKey]result, now metav1.Time) appsv1alpha1.NodePodProbeStatus {
	valid := map[resultKey]bool{}
	for _, pp := range npp.Spec.PodProbes {
		for _, p := range pp.Probes {
			valid[resultKey{UID: pp.UID, Probe: p.Name}] = true
		}
	}
	var out appsv1alpha1.NodePodProbeStatus
	index := map[string]int{} // pod UID -> position in out
	applied := map[resultKey]bool{}
	for _, ps := range npp.Status.PodProbeStatuses {
		entry := appsv1alpha1.PodProbeStatus{Namespace: ps.Namespace, Name: ps.Name, UID: ps.UID}
		for _, st := range ps.ProbeStates {
			k := resultKey{UID: ps.UID, Probe: st.Name}
			if !valid[k] {
				continue
			}
			if r, ok := results[k]; ok {
				st = applyResult(st, r, now)
				applied[k] = true
			}
			entry.ProbeStates = append(entry.ProbeStates, st)
		}
		if len(entry.ProbeStates) > 0 {
			index[ps.UID] = len(out.PodProbeStatuses)
			out.PodProbeStatuses = append(out.PodProbeStatuses, entry)
		}
	}
	// New entries follow the spec's order, so the status is stable whatever
	// order the map yields.
	for _, pp := range npp.Spec.PodProbes {
		for _, p := range pp.Probes {
			k := resultKey{UID: pp.UID, Probe: p.Name}
			r, ok := results[k]
			if !ok || applied[k] {
				continue
			}
			applied[k] = true
			i, ok := index[pp.UID]
			if !ok {
				i = len(out.PodProbeStatuses)
				index[pp.UID] = i
				out.PodProbeStatuses = append(out.PodProbeStatuses, appsv1alpha1.PodProbeStatus{Namespace: pp.Namespace, Name: pp.Name, UID: pp.UID})
			}
			st := applyResult(appsv1alpha1.ContainerProbeState{Name: p.Name}, r, now)
			out.PodProbeStatuses[i].ProbeStates = append(out.PodProbeStatuses[i].ProbeStates, st)
		}
	}
	return out
}

func applyResult(st appsv1alpha1.ContainerProbeState, r result, now metav1.Time) appsv1alpha1.ContainerProbeState {
	if st.State != r.State || st.LastTransitionTime.IsZero() {
		st.LastTransitionTime = now
	}
	st.State, st.Message, st.LastProbeTime = r.State, r.Message, r.LastProbeTime
	return st
}

// Pod events of a probe result change (OpenKruise's reasons).
const (
	EventProbeSucceeded = "KruiseProbeSucceeded"
	EventProbeFailed    = "KruiseProbeFailed"
)

// transition is one probe whose state changed between two statuses.
type transition struct {
	Namespace, Name, UID, Probe string
	State                       appsv1alpha1.ProbeState
	Message                     string
}

// transitions lists the Succeeded/Failed states of next that differ from
// prev (new entries included; Unknown is not an event).
func transitions(prev, next appsv1alpha1.NodePodProbeStatus) []transition {
	old := map[resultKey]appsv1alpha1.ProbeState{}
	for _, ps := range prev.PodProbeStatuses {
		for _, st := range ps.ProbeStates {
			old[resultKey{UID: ps.UID, Probe: st.Name}] = st.State
		}
	}
	var out []transition
	for _, ps := range next.PodProbeStatuses {
		for _, st := range ps.ProbeStates {
			if st.State == appsv1alpha1.ProbeUnknown || old[resultKey{UID: ps.UID, Probe: st.Name}] == st.State {
				continue
			}
			out = append(out, transition{Namespace: ps.Namespace, Name: ps.Name, UID: ps.UID, Probe: st.Name, State: st.State, Message: st.Message})
		}
	}
	return out
}
