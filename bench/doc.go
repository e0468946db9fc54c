// Package bench is Flotilla's scale harness: whole-system scenarios run on the
// local control plane (many kwok nodes), each measured side by side with a
// baseline in the same run — kube-controller-manager's Deployment/ReplicaSet
// controllers, a raw client creating pods as fast as the API allows, and, for
// the CloneSet's scale-up, the floor of its writes (its pods and pod writes
// sent by the bench process with no controller).
//
// The scenarios are Go tests so that they share the integration tests'
// machinery (kit/testenv, test/e2e/framework). `go test ./bench/` runs them at
// smoke size (part of `make test`, so the harness cannot rot); `make bench`
// runs them at default size on a private cluster and writes the table to
// bench/RESULTS.md. See README.md ("Performance") and RESULTS.md.
package bench
