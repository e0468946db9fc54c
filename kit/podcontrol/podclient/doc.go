// Package podclient is kit/podcontrol over client-go's typed clientset
// (k8s.io/client-go/kubernetes): New and Or, the PodControl every controller
// builds, and Clocked, what kit's pod writers that stamp times and retry on
// Conflict share.
//
// It is a package of its own because the clientset's init registers every
// built-in API group with client-go's scheme (about 20 MiB of resident
// memory): the node agent (probe-agent) links kit/podcontrol for the
// PodControl interface and writes through a plain REST client of its own
// (podcontrol.NewFor), so kit/podcontrol must not link the clientset. A test
// of kit (internal/depcheck) keeps it that way.
package podclient
