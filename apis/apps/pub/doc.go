// Package pub holds API pieces shared by several apps.kruise.io workloads:
// lifecycle hooks, the in-place update state recorded on pods, update
// priority/scatter strategies, readiness-gate names and the well-known
// label and annotation keys that OpenKruise-compatible tooling relies on.
//
// +k8s:deepcopy-gen=package
package pub
