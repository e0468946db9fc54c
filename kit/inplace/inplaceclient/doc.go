// Package inplaceclient carries in-place updates out through the API
// server: Control (New) starts an update (Update: InPlaceUpdateReady=False
// and Ready recomputed through pods/status, after a dry run of the pod
// write, then the pod write) and advances it (Refresh: the parked spec
// after a grace period, the next batch, InPlaceUpdateReady=True at the
// end), on the decisions of kit/inplace. CloneSet, Advanced StatefulSet and
// Advanced DaemonSet use it through kit/workload.
//
// It is kit/inplace's client half, a package of its own so that
// kit/inplace — pure, and imported by the node agent (probe-agent) — does
// not link client-go's clientset, whose init registers every built-in API
// group (about 20 MiB of the agent's resident memory). A test of kit
// (internal/depcheck) keeps it that way.
package inplaceclient
