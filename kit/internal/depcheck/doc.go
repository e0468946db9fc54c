// Package depcheck holds only a test: the kit packages the node agent
// (probe-agent) links must not link client-go's clientset
// (k8s.io/client-go/kubernetes and its scheme), whose init registers every
// built-in API group with client-go's scheme and costs the agent about
// 20 MiB of resident memory. The clientset-bound halves of those packages
// live in packages of their own (kit/podcontrol/podclient,
// kit/revision/revisionclient, kit/inplace/inplaceclient), which only the
// controllers import.
package depcheck
