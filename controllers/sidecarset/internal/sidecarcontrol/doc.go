// Package sidecarcontrol holds the pure SidecarSet logic shared by the pod
// admission webhook (injection at pod creation) and the controller (in-place
// and hot sidecar upgrades): selector matching, the content hashes and the
// pod annotations in OpenKruise's JSON shapes, revision data and the choice
// of the revision to inject, patchPodMetadata and its whitelist, and the pod
// mutations of an upgrade. Nothing here talks to the API server: callers pass
// namespace labels, ControllerRevisions and clocks in.
//
// Objects passed in are never modified; functions that produce a pod return
// a modified deep copy.
package sidecarcontrol
