// Package lifecycle implements OpenKruise's pod lifecycle hooks for the
// workloads that share them (CloneSet, Advanced StatefulSet, Advanced
// DaemonSet): the state machine in the pod label
// lifecycle.apps.kruise.io/state, the hook checks, and markPodNotReady
// through the KruisePodReady condition (kit/podreadiness).
//
// # States
//
//	PreparingNormal → Normal                                      new pods
//	Normal → PreparingUpdate → Updating → Updated → Normal        in-place update
//	* → PreparingDelete                                           deletion
//	PreparingDelete → PreparingNormal                             cancelled deletion (CloneSet scale-up)
//
// A hook (pub.LifecycleHook) is a set of labels and finalizers that a user's
// controller puts on a pod while it has work to do. A pod is hooked
// (IsHooked) when it carries any of them, all-hooked (IsAllHooked) when it
// carries every one. The workload moves a hooked pod into PreparingDelete or
// PreparingUpdate instead of deleting or updating it, and proceeds once the
// user's controller has removed the hook (the pod is no longer hooked). After
// an in-place update the pod stays Updated until the inPlaceUpdate hook is
// fully re-applied, then becomes Normal. A new pod leaves PreparingNormal once
// all preNormal hooks are applied (or, with no preNormal hook, at once or
// once scheduled, as the workload asks).
//
// With markPodNotReady, entering PreparingDelete / PreparingUpdate also adds
// the KruisePodReady key {userAgent: "Lifecycle", key: "preDeleteHook" /
// "preUpdateHook"}, forcing the pod NotReady; entering Updated removes the
// preUpdateHook key.
//
// # Shape
//
// Decide is a pure function: given the workload's Lifecycle, the pod and the
// wanted operation it says whether to proceed, to write a Patch and stop, to
// wait, or that the operation is refused. Patch values are built by the pure
// transition builders SetState and SetStateWithHook; they carry the metadata
// change (state label, RFC3339 timestamp annotation, re-added hook labels and
// finalizers) and the KruisePodReady keys to add or remove. Writer applies a
// Patch: the readiness keys first through pods/status (so the pod is NotReady
// before the state label announces the hook phase), then the metadata as a
// strategic merge patch. Nothing here modifies a pod it is given.
//
// # Deliberate differences from OpenKruise
//
//   - The preUpdateHook key is removed on entering Updated whether or not
//     markPodNotReady is (still) set, and both lifecycle keys are removed on
//     entering Normal or PreparingNormal. OpenKruise removes the key only on
//     Updated and only with markPodNotReady, so a pod whose hook was turned
//     off, or that went PreparingUpdate → Normal on a rollback, stayed NotReady
//     for good. Removing a key the pod does not hold costs no request.
//   - PreparingUpdate/Updating with no inPlaceUpdate hook go straight to
//     Normal instead of passing through Updated for one sync.
//   - The timestamp is written in UTC.
package lifecycle
