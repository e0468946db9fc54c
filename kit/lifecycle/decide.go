package lifecycle

import (
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	corev1 "k8s.io/api/core/v1"
)

// Operation is what the workload wants to do with a pod.
type Operation int

const (
	// OpDelete: the pod was chosen for deletion (scale-in, specified delete,
	// recreate update, or it already waits in PreparingDelete).
	OpDelete Operation = iota + 1
	// OpInPlaceUpdate: the pod was chosen to be updated in place.
	OpInPlaceUpdate
	// OpBecomeNormal: the per-sync refresh that moves a pod towards Normal:
	// PreparingNormal → Normal, Updating (completed) → Updated/Normal,
	// Updated → Normal, and PreparingUpdate → Updated/Normal when the pod is
	// already at the update revision (the update was rolled back while the
	// pod waited for its hook).
	OpBecomeNormal
	// OpCancelDelete: the workload needs the pod again (CloneSet scale-up
	// while it waits in PreparingDelete): return it to PreparingNormal.
	OpCancelDelete
)

var operationNames = [...]string{OpDelete: "Delete", OpInPlaceUpdate: "InPlaceUpdate", OpBecomeNormal: "BecomeNormal", OpCancelDelete: "CancelDelete"}

func (o Operation) String() string { return enumString(operationNames[:], o, "Operation") }

// Request is the operation and the facts about the pod that Decide cannot
// see in the pod itself.
type Request struct {
	Op Operation
	// WaitForScheduling (OpBecomeNormal): without a preNormal hook, keep a
	// PreparingNormal pod there until it has a node (CloneSet does this).
	WaitForScheduling bool
	// AtUpdateRevision (OpBecomeNormal): the pod already runs the workload's
	// update revision.
	AtUpdateRevision bool
	// UpdateCompleted (OpBecomeNormal): the in-place update of an Updating pod
	// has completed (every updated container runs its new image).
	UpdateCompleted bool
}

// Action is what the caller does next.
type Action int

const (
	// ActionNone: nothing to do; the pod is settled as far as this operation
	// is concerned.
	ActionNone Action = iota
	// ActionProceed: perform the operation now. For OpInPlaceUpdate apply
	// Decision.Patch (state Updating) with Patch.ApplyMetadata in the same
	// write that updates the pod; for OpDelete the patch is zero.
	ActionProceed
	// ActionPatch: write Decision.Patch (Writer.Patch) and do not perform the
	// operation in this sync; decide again on the next one.
	ActionPatch
	// ActionWait: a hook holds the pod (or the update is still running);
	// nothing to write. Decide again when the pod changes.
	ActionWait
	// ActionRefuse: the operation is not allowed in the pod's state; the
	// caller should not have chosen this pod (Decision.Reason says why).
	ActionRefuse
)

var actionNames = [...]string{ActionNone: "None", ActionProceed: "Proceed", ActionPatch: "Patch", ActionWait: "Wait", ActionRefuse: "Refuse"}

func (a Action) String() string { return enumString(actionNames[:], a, "Action") }

// enumString is names[v], or kind(v) for a value without a name.
func enumString[T ~int](names []string, v T, kind string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, int(v))
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Patch to write (ActionPatch) or to apply with the operation
	// (ActionProceed); zero otherwise.
	Patch Patch
	// Reason explains the decision, for logs and events.
	Reason string
}

// Decide says what to do next with pod for the requested operation, given
// the workload's lifecycle (nil when it has none). It is pure: the pod is not
// modified and now is only stamped into patches.
//
// OpDelete:
//   - no preDelete hook → Proceed;
//   - pod hooked and not yet PreparingDelete → Patch: move to PreparingDelete
//     (+ PreDeleteKey with markPodNotReady);
//   - PreparingDelete and still hooked → Wait (Patch if the NotReady key
//     must be restored);
//   - otherwise (never hooked, or hook released) → Proceed.
//
// OpInPlaceUpdate, by state:
//   - "", PreparingNormal, Normal: hooked → Patch to PreparingUpdate
//     (+ PreUpdateKey with markPodNotReady); else Proceed (Patch: Updating);
//   - Updated: Patch to PreparingUpdate re-adding the hook's labels and
//     finalizers (Proceed when there is no inPlaceUpdate hook);
//   - PreparingUpdate: hooked → Wait (or Patch restoring the key); else Proceed;
//   - Updating: Proceed (the update is re-applied, e.g. for a newer revision);
//   - PreparingDelete or an unknown state: Refuse.
//
// OpBecomeNormal, by state:
//   - PreparingNormal: preNormal hook all-hooked, or no preNormal hook (and
//     scheduled, with WaitForScheduling) → Patch to Normal; else Wait;
//   - Updating: not UpdateCompleted → Wait; else Patch to Updated if the
//     inPlaceUpdate hook is not all-hooked, to Normal if it is or there is none;
//   - PreparingUpdate with AtUpdateRevision: as Updating completed; without: None;
//   - Updated: hook all-hooked or none → Patch to Normal; else Wait;
//   - Normal: None (Patch if it still holds a lifecycle NotReady key);
//   - "", PreparingDelete, unknown: None.
//
// OpCancelDelete: not PreparingDelete → None; a hook with markPodNotReady →
// Refuse (no regret, as OpenKruise); else Patch to PreparingNormal.
func Decide(lc *pub.Lifecycle, pod *corev1.Pod, req Request, now time.Time) Decision {
	var preDelete, inPlace, preNormal *pub.LifecycleHook
	if lc != nil {
		preDelete, inPlace, preNormal = lc.PreDelete, lc.InPlaceUpdate, lc.PreNormal
	}
	switch req.Op {
	case OpDelete:
		return decideDelete(preDelete, pod, now)
	case OpInPlaceUpdate:
		return decideInPlaceUpdate(inPlace, pod, now)
	case OpBecomeNormal:
		return decideBecomeNormal(inPlace, preNormal, pod, req, now)
	case OpCancelDelete:
		if State(pod) != pub.LifecycleStatePreparingDelete {
			return Decision{Action: ActionNone, Reason: "not in PreparingDelete"}
		}
		if MarksPodNotReady(lc) {
			return Decision{Action: ActionRefuse, Reason: "a lifecycle hook marks pods NotReady: PreparingDelete cannot be cancelled"}
		}
		return patch(SetState(pod, pub.LifecycleStatePreparingNormal, false, now), "deletion cancelled: back to PreparingNormal")
	}
	return Decision{Action: ActionRefuse, Reason: fmt.Sprintf("unknown operation %v", req.Op)}
}

func decideDelete(hook *pub.LifecycleHook, pod *corev1.Pod, now time.Time) Decision {
	if hook == nil {
		return Decision{Action: ActionProceed, Reason: "no preDelete hook"}
	}
	hooked := IsHooked(hook, pod)
	if State(pod) == pub.LifecycleStatePreparingDelete {
		if !hooked {
			return Decision{Action: ActionProceed, Reason: "preDelete hook released"}
		}
		return waitOrRestore(SetState(pod, pub.LifecycleStatePreparingDelete, hook.MarkPodNotReady, now), "waiting for the preDelete hook to be released")
	}
	if !hooked {
		return Decision{Action: ActionProceed, Reason: "pod not hooked by preDelete"}
	}
	return patch(SetState(pod, pub.LifecycleStatePreparingDelete, hook.MarkPodNotReady, now), "preDelete hook: move to PreparingDelete and wait")
}

func decideInPlaceUpdate(hook *pub.LifecycleHook, pod *corev1.Pod, now time.Time) Decision {
	proceed := func(reason string) Decision {
		return Decision{Action: ActionProceed, Patch: SetState(pod, pub.LifecycleStateUpdating, false, now), Reason: reason}
	}
	switch s := State(pod); s {
	case "", pub.LifecycleStatePreparingNormal, pub.LifecycleStateNormal:
		if IsHooked(hook, pod) {
			return patch(SetState(pod, pub.LifecycleStatePreparingUpdate, hook.MarkPodNotReady, now), "inPlaceUpdate hook: move to PreparingUpdate and wait")
		}
		return proceed("pod not hooked by inPlaceUpdate")
	case pub.LifecycleStateUpdated:
		if hook == nil {
			return proceed("no inPlaceUpdate hook")
		}
		return patch(SetStateWithHook(pod, pub.LifecycleStatePreparingUpdate, hook, now), "next revision: re-apply the inPlaceUpdate hook and move to PreparingUpdate")
	case pub.LifecycleStatePreparingUpdate:
		if IsHooked(hook, pod) {
			return waitOrRestore(SetState(pod, pub.LifecycleStatePreparingUpdate, hook.MarkPodNotReady, now), "waiting for the inPlaceUpdate hook to be released")
		}
		return proceed("inPlaceUpdate hook released")
	case pub.LifecycleStateUpdating:
		return proceed("update already in progress")
	default:
		return Decision{Action: ActionRefuse, Reason: fmt.Sprintf("pod in lifecycle state %q cannot be updated in place", s)}
	}
}

func decideBecomeNormal(inPlace, preNormal *pub.LifecycleHook, pod *corev1.Pod, req Request, now time.Time) Decision {
	// afterUpdate: Updated while the user's controller has not re-applied the
	// inPlaceUpdate hook, else straight to Normal.
	afterUpdate := func() Decision {
		if inPlace != nil && !IsAllHooked(inPlace, pod) {
			return patch(SetState(pod, pub.LifecycleStateUpdated, inPlace.MarkPodNotReady, now), "update done: move to Updated until the inPlaceUpdate hook is re-applied")
		}
		return patch(SetState(pod, pub.LifecycleStateNormal, false, now), "update done: move to Normal")
	}
	switch State(pod) {
	case pub.LifecycleStatePreparingNormal:
		switch {
		case preNormal != nil && !IsAllHooked(preNormal, pod):
			return Decision{Action: ActionWait, Reason: "waiting for the preNormal hook to be applied"}
		case preNormal == nil && req.WaitForScheduling && pod.Spec.NodeName == "":
			return Decision{Action: ActionWait, Reason: "waiting for the pod to be scheduled"}
		}
		return patch(SetState(pod, pub.LifecycleStateNormal, false, now), "ready for service: move to Normal")
	case pub.LifecycleStateUpdating:
		if !req.UpdateCompleted {
			return Decision{Action: ActionWait, Reason: "in-place update in progress"}
		}
		return afterUpdate()
	case pub.LifecycleStatePreparingUpdate:
		if !req.AtUpdateRevision {
			return Decision{Action: ActionNone, Reason: "waiting in PreparingUpdate for the update"}
		}
		return afterUpdate()
	case pub.LifecycleStateUpdated:
		if inPlace == nil || IsAllHooked(inPlace, pod) {
			return patch(SetState(pod, pub.LifecycleStateNormal, false, now), "inPlaceUpdate hook re-applied: move to Normal")
		}
		return waitOrRestore(SetState(pod, pub.LifecycleStateUpdated, false, now), "waiting for the inPlaceUpdate hook to be re-applied")
	case pub.LifecycleStateNormal:
		if p := SetState(pod, pub.LifecycleStateNormal, false, now); !p.IsZero() {
			return patch(p, "Normal pod still held NotReady by a lifecycle key: release it")
		}
		return Decision{Action: ActionNone, Reason: "Normal"}
	}
	return Decision{Action: ActionNone, Reason: fmt.Sprintf("nothing to do in lifecycle state %q", State(pod))}
}

func patch(p Patch, reason string) Decision {
	return Decision{Action: ActionPatch, Patch: p, Reason: reason}
}

// waitOrRestore waits, unless p (a SetState to the current state) still has
// readiness keys to fix.
func waitOrRestore(p Patch, reason string) Decision {
	if p.IsZero() {
		return Decision{Action: ActionWait, Reason: reason}
	}
	return patch(p, reason+" (fixing the lifecycle NotReady key)")
}
