// Package revisionclient is kit/revision's Control over client-go's
// typed clientset (k8s.io/client-go/kubernetes): New.
//
// It is a package of its own so that kit/revision — data, names, hashes,
// Resolve, Truncate — does not link the clientset, whose init registers
// every built-in API group (about 20 MiB of resident memory): the node
// agent imports kit/inplace, which reads revision hashes through
// kit/revision. A test of kit (internal/depcheck) keeps it that way.
package revisionclient
