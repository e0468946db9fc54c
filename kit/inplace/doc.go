// Package inplace is the pure core of in-place update, shared by CloneSet,
// Advanced StatefulSet and Advanced DaemonSet: it decides whether a pod can
// move from one revision to another without being recreated, in which
// batches its containers change, what the pod records about it, and when it
// is done. It makes no client calls and reads no clock (callers pass now);
// pods, states and specs given to it are never modified.
//
// It exists because the three workloads must update pods exactly as
// OpenKruise does and leave the same traces on them, which other
// components and tools read: the apps.kruise.io/inplace-update-state and
// apps.kruise.io/inplace-update-grace annotations and the
// InPlaceUpdateReady readiness gate / condition.
//
// # What may change in place
//
// Diff compares two revisions' data ({"spec":{"template":…}}, see
// kit/revision). Only container images and template labels/annotations
// may differ; the result lists new images per container, the pod-wide
// metadata change, and, per container, the changed labels/annotations its
// env reads through the downward API (those containers must be restarted:
// "update env from metadata", the node agent's job — probe-agent's
// internal/containermeta). RefusalForPod takes the pod and the workload's
// InPlaceUpdateEnvFromMetadata gate: off (or Refusal), or on a pod no agent
// has recorded, such a change is turned down and the workload recreates
// the pod (InPlaceIfPossible) or refuses (InPlaceOnly) instead of declaring
// an update nothing carries out; on, it is applied in place and
// UpdateCompleted waits for the agent's apps.kruise.io/runtime-containers-meta
// to show the restarted containers.
//
// # Batches
//
// When containers have launch priorities (env KRUISE_CONTAINER_PRIORITY,
// annotation apps.kruise.io/container-launch-priority: Ordered, or the
// webhook-injected KRUISE_CONTAINER_BARRIER), the highest-priority changed
// containers are updated first and the rest wait in the state's next*
// fields until those run the new image and are Ready (Batches, PlanBatch,
// NextBatch).
//
// # Usage (one pod, from a workload's update and refresh steps)
//
//	spec, ok := inplace.Diff(oldRev.Data.Raw, newRev.Data.Raw)
//	if why := inplace.RefusalForPod(pod, spec, ok, gates.Enabled(features.InPlaceUpdateEnvFromMetadata)); why != "" { … } // recreate, or refuse
//	if inplace.HasReadinessGate(pod) {
//		conds, changed := inplace.StartConditions(pod, now)       // write status first (+ Ready recompute)
//	}
//	if grace == 0 {
//		state, batch := inplace.Start(pod, newRev.Name, spec, now)
//		updated, err := inplace.ApplyToPod(pod, batch, &state)      // + revision labels; Update the pod
//	} else {
//		state := inplace.NewState(newRev.Name, spec, now)
//		v, err := inplace.EncodeGrace(inplace.GraceSpec{Revision: newRev.Name, Spec: spec, GraceSeconds: grace})
//		// write state and grace annotations only; requeue after grace
//	}
//
//	// refresh, every sync, per pod:
//	state, err := inplace.DecodeState(pod)
//	if v, ok := pub.GetInPlaceUpdateGrace(pod); ok {
//		g, err := inplace.DecodeGrace(v)   // revision changed: drop the annotation instead
//		if d := inplace.GraceRemaining(state, g.GraceSeconds, now); d > 0 { requeue after d }
//		st, batch := inplace.PlanBatch(pod, state, g.Spec, now)
//		updated, err := inplace.ApplyToPod(pod, batch, &st)         // also removes the grace annotation
//	} else if st, batch, ok := inplace.NextBatch(pod, state, now); ok {
//		updated, err := inplace.ApplyToPod(pod, batch, &st)
//	} else if inplace.MarkReady(pod, state) {   // completed, or a gate left False with no update in flight
//		conds, changed := inplace.CompletedConditions(pod, now)
//	}
//
// # Not here
//
// Vertical scaling (resources), the VolumeClaimTemplate-hash rule, image
// pre-download, the env hash and runtime-containers-meta JSON
// (kit/containermeta), the Ready condition recompute and every client call
// belong to other packages or the workload controllers: Control, which
// carries an update and its refresh out through the API server, is in
// kit/inplace/inplaceclient, so that this package (which the node agent
// imports) does not link client-go's clientset.
package inplace
