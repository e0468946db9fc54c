// Package podutil answers the questions every Flotilla workload controller
// (CloneSet, Advanced StatefulSet, Advanced DaemonSet) asks about its pods:
// is a pod active, ready, available, being deleted, asked to be deleted, and
// in which lifecycle state; and, when scaling down, which pods go first.
//
// The ready/available vocabulary, from weakest to strongest, each
// controller picking the words its OpenKruise counterpart uses:
//
//   - IsReady: the Ready condition is True;
//   - IsRunningAndReady: and phase Running;
//   - IsActiveAndReady: and not terminating (SidecarSet, Advanced
//     StatefulSet, PUB);
//   - IsWorkloadReady: Running, Ready, InPlaceUpdateReady not False
//     (CloneSet's readyReplicas);
//   - IsAvailable: Ready for minReadySeconds at a given time;
//   - IsInPlaceUpdateReady / IsInPlaceUpdateCompleted: no in-place update
//     holds the pod back, judged by the condition / by the recorded state;
//     IsInPlaceUpdateNotReady: the condition is False (an update started);
//   - IsWorkloadAvailable: Running, available, lifecycle Normal and
//     InPlaceUpdateReady (CloneSet's availableReplicas and scale-down).
//
// It exists so that these answers are computed once, identically, for all
// workloads. OpenKruise spreads them over k8s.io/kubernetes helpers and
// per-controller copies; Flotilla cannot depend on k8s.io/kubernetes and must
// not let the controllers drift apart, because status counters
// (readyReplicas, availableReplicas) and the choice of pods to delete are
// user-visible and must match OpenKruise's.
//
// Everything here is a pure function of its arguments: no client calls, no
// clock reads (callers pass now), and pods taken from an informer cache are
// never modified — SortForDeletion sorts a copy of the slice it is given.
//
// The wire-level keys it reads (specified-delete, pod-deletion-cost, lifecycle
// state) come from apis/apps/pub, the API's shared constants.
package podutil
