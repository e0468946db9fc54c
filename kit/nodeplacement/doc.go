// Package nodeplacement answers the questions a controller that runs one pod
// per node asks (BroadcastJob, Advanced DaemonSet): may a pod of this spec run
// on this node (Eligibility), may a pod already there keep running, how is a
// pod pinned to its node so that kube-scheduler still places it (PinToNode),
// and which node a pod belongs to (TargetNode).
//
// Eligibility parses the spec once (node affinity, summed requests); build one
// per pod spec and reuse it across nodes. It reads nothing but its arguments.
package nodeplacement
