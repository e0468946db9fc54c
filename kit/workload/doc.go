// Package workload is the skeleton every pod workload reconciler (CloneSet,
// Advanced StatefulSet, Advanced DaemonSet, BroadcastJob) is made of, so that
// each controller keeps only what makes it different:
//
//   - Base: the work queue and loop, the pod informer (listed server-side by
//     a label every pod of the workload carries, indexed by owner UID and by
//     orphan, slimmed with SlimPod), the ControllerRevision informer, the
//     resource-version expectations of the controller's own writes and the
//     status pacer;
//   - the opening of sync: Get (gone → forget), ScaleInFlight (creations and
//     deletions not yet observed), OwnWritesPending (a cache that does not
//     show our own writes yet), Finish (retry, or requeue for the time-driven
//     wake-ups the steps asked for);
//   - SyncRevisions and TruncateHistory (kit/revision);
//   - WriteStatus: the status write, only when it changed, counters-only
//     changes paced;
//   - adoption and release of pods (Adopters for the event handlers,
//     AdoptOrphans and ReleaseUnselected for sync).
//
// It never imports the generated client: a controller passes its typed
// lister's Get and its typed UpdateStatus in as functions.
package workload
