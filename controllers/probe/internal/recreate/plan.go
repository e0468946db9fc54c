package recreate

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// container is what the plan needs of a container the runtime reports for a pod: the latest one of each name.
type container struct {
	ID        string // without the "<runtime>://" prefix
	Running   bool
	CreatedAt time.Time
}

// rawID strips the "<runtime>://" prefix of a container ID as the pod status writes it.
func rawID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// byPhaseAndAge orders a pod's requests as kruise-daemon picks them: Completed, Recreating, Pending, then new
// ones; oldest first within a phase.
func byPhaseAndAge(crrs []*appsv1alpha1.ContainerRecreateRequest) {
	weight := map[appsv1alpha1.ContainerRecreateRequestPhase]int{
		appsv1alpha1.ContainerRecreateRequestCompleted:  1,
		appsv1alpha1.ContainerRecreateRequestRecreating: 2,
		appsv1alpha1.ContainerRecreateRequestPending:    3,
	}
	w := func(p appsv1alpha1.ContainerRecreateRequestPhase) int {
		if v, ok := weight[p]; ok {
			return v
		}
		return 4
	}
	sort.SliceStable(crrs, func(i, j int) bool {
		a, b := crrs[i], crrs[j]
		if a.Status.Phase != b.Status.Phase {
			return w(a.Status.Phase) < w(b.Status.Phase)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// syncedStatuses reads the controller's copy of the pod's container statuses.
func syncedStatuses(crr *appsv1alpha1.ContainerRecreateRequest) map[string]appsv1alpha1.ContainerRecreateRequestSyncContainerStatus {
	var list []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(crr.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]), &list); err != nil {
		return nil
	}
	out := make(map[string]appsv1alpha1.ContainerRecreateRequestSyncContainerStatus, len(list))
	for _, s := range list {
		out[s.Name] = s
	}
	return out
}

func previousState(crr *appsv1alpha1.ContainerRecreateRequest, name string) *appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	for i := range crr.Status.ContainerRecreateStates {
		if crr.Status.ContainerRecreateStates[i].Name == name {
			return &crr.Status.ContainerRecreateStates[i]
		}
	}
	return nil
}

// currentStates is each requested container's state from what the runtime shows now (kruise-daemon's rules):
// a finished state stays; a container the runtime does not have is Pending; one that runs another container
// than the one the request was accepted for (or exited, to be started again) is Recreating, and Succeeded once
// the pod reports that new container ready (synced by the controller) for minStartedSeconds; the original
// container still running is Pending, unless this request already decided to stop it (IsKilled), when it stays
// Recreating: the stop is pending or was cut short by an agent restart.
func currentStates(crr *appsv1alpha1.ContainerRecreateRequest, current map[string]container, now time.Time) []appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	var minStarted time.Duration
	force := false
	if s := crr.Spec.Strategy; s != nil {
		minStarted = time.Duration(s.MinStartedSeconds) * time.Second
		force = s.ForceRecreate
	}
	synced := syncedStatuses(crr)
	out := make([]appsv1alpha1.ContainerRecreateRequestContainerRecreateState, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		prev := previousState(crr, c.Name)
		if prev != nil && (prev.Phase == appsv1alpha1.ContainerRecreateRequestSucceeded || prev.Phase == appsv1alpha1.ContainerRecreateRequestFailed) {
			out = append(out, *prev)
			continue
		}
		killed := prev != nil && prev.IsKilled
		st := appsv1alpha1.ContainerRecreateRequestContainerRecreateState{Name: c.Name, IsKilled: killed}
		cur, ok := current[c.Name]
		orig := ""
		if c.StatusContext != nil {
			orig = rawID(c.StatusContext.ContainerID)
		}
		switch {
		case !ok:
			st.Phase, st.Message = appsv1alpha1.ContainerRecreateRequestPending, "not found container on Node"
		case killed:
			st.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
			if cur.ID != orig && cur.Running {
				if s, ok := synced[c.Name]; ok && rawID(s.ContainerID) == cur.ID && s.Ready && now.Sub(cur.CreatedAt) >= minStarted {
					st.Phase = appsv1alpha1.ContainerRecreateRequestSucceeded
				}
			}
		case force:
			st.Phase = appsv1alpha1.ContainerRecreateRequestPending
		case !cur.Running || cur.ID != orig:
			// Recreated (or exited) by something else: nothing left to stop; wait for the new one.
			st.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
			if s, ok := synced[c.Name]; ok && cur.Running && rawID(s.ContainerID) == cur.ID && s.Ready && now.Sub(cur.CreatedAt) >= minStarted {
				st.Phase = appsv1alpha1.ContainerRecreateRequestSucceeded
			}
		default:
			st.Phase = appsv1alpha1.ContainerRecreateRequestPending
		}
		out = append(out, st)
	}
	return out
}

// failed reports a state Failed while the failure policy is Fail: the request completes.
func failed(crr *appsv1alpha1.ContainerRecreateRequest, states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState) bool {
	if crr.Spec.Strategy != nil && crr.Spec.Strategy.FailurePolicy == appsv1alpha1.ContainerRecreateRequestFailurePolicyIgnore {
		return false
	}
	for _, s := range states {
		if s.Phase == appsv1alpha1.ContainerRecreateRequestFailed {
			return true
		}
	}
	return false
}

// done reports every container Succeeded or Failed.
func done(states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState) bool {
	for _, s := range states {
		if s.Phase != appsv1alpha1.ContainerRecreateRequestSucceeded && s.Phase != appsv1alpha1.ContainerRecreateRequestFailed {
			return false
		}
	}
	return true
}

// markStops decides which Pending containers to stop now and marks them Recreating and IsKilled, in place: with
// orderedRecreate only the first, and only once every container before it has finished recreating; otherwise
// all of them. The marks are written before anything is stopped (see stopsDue).
func markStops(crr *appsv1alpha1.ContainerRecreateRequest, states []appsv1alpha1.ContainerRecreateRequestContainerRecreateState) {
	ordered := crr.Spec.Strategy != nil && crr.Spec.Strategy.OrderedRecreate
	for i := range states {
		s := &states[i]
		switch s.Phase {
		case appsv1alpha1.ContainerRecreateRequestSucceeded, appsv1alpha1.ContainerRecreateRequestFailed:
			continue
		case appsv1alpha1.ContainerRecreateRequestRecreating:
			if ordered {
				return
			}
			continue
		}
		if s.Message != "" { // not on the node: nothing to stop
			if ordered {
				return
			}
			continue
		}
		s.Phase, s.IsKilled = appsv1alpha1.ContainerRecreateRequestRecreating, true
		if ordered {
			return
		}
	}
}

// stopsDue are the containers the recorded states say to stop that still run the container the request was
// accepted for. Only that container is ever stopped, so a request restarts a container at most once whatever
// happens to the agent: after a restart, a container already stopped runs under a new ID (or not at all) and is
// left alone. forceRecreate stops it even if it is not running (still starting).
func stopsDue(crr *appsv1alpha1.ContainerRecreateRequest, current map[string]container) []string {
	force := crr.Spec.Strategy != nil && crr.Spec.Strategy.ForceRecreate
	var out []string
	for _, c := range crr.Spec.Containers {
		prev := previousState(crr, c.Name)
		if prev == nil || !prev.IsKilled || prev.Phase != appsv1alpha1.ContainerRecreateRequestRecreating || c.StatusContext == nil {
			continue
		}
		if cur, ok := current[c.Name]; ok && (cur.Running || force) && cur.ID == rawID(c.StatusContext.ContainerID) {
			out = append(out, c.Name)
		}
	}
	return out
}
