// Package shell is the part of the binary shell (kit/app) that needs no
// Kubernetes clientset: flags, logging, metrics, health endpoints, the
// registries of informers, sources and controllers, and the loop that
// starts them, waits for their caches and runs the controllers.
//
// kit/app builds on it, adding client-go's clientset, leader election and
// replica components (webhooks). The node agent (probe-agent) runs on this
// package alone: it talks to the API server through plain REST clients,
// because client-go's typed clientset registers every API group at start-up
// and that alone costs more memory than a per-node agent may use
// (bench/RESULTS.md, issue 28). Nothing here may import
// k8s.io/client-go/kubernetes; a test checks.
package shell
