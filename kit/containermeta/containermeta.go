// Package containermeta is the pure core of "in-place update of env from
// metadata" (OpenKruise's InPlaceUpdateEnvFromMetadata), shared by the node
// agent that restarts containers and the workload controllers that wait for
// those restarts:
//
//   - the hash of the env a container reads from pod labels/annotations
//     through the downward API (fieldRef metadata.labels['k'] /
//     metadata.annotations['k']): ExpectedHash resolves it from the pod's
//     metadata as it is now, CurrentHash from the env a running container
//     was started with. Both are OpenKruise v1.9's value (FNV-1a 32 over
//     spew's %#v of the JSON of the env vars sorted by name), so hashes
//     written by either agent compare equal;
//   - the pod annotation apps.kruise.io/runtime-containers-meta (Decode,
//     Encode), in OpenKruise's JSON;
//   - Consistent: every container of the pod runs, under the containerID
//     the pod status reports, with the env its metadata resolves to now.
//
// It makes no client calls; pods and sets given to it are never modified.
package containermeta

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/davecgh/go-spew/spew"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// Ref is one env var that reads a pod label or annotation.
type Ref struct {
	// Env is the env var's name.
	Env string
	// Kind is "labels" or "annotations"; Key the label/annotation key.
	Kind, Key string
}

// excluded env vars are never part of the hash: SidecarSet's version vars
// read annotations that change on every sidecar upgrade, which restarts
// containers by other means (as in OpenKruise).
var excluded = []string{"SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"}

// ParseFieldPath parses metadata.labels['k'] and metadata.annotations['k']
// (the only subscripted field paths the API server accepts) into the kind
// ("labels" or "annotations") and the key.
func ParseFieldPath(path string) (kind, key string, ok bool) {
	for _, k := range [...]string{"labels", "annotations"} {
		prefix := "metadata." + k + "['"
		if strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "']") && len(path) > len(prefix)+2 {
			return k, path[len(prefix) : len(path)-2], true
		}
	}
	return "", "", false
}

// Refs lists the env vars of c that read a label or annotation, in spec
// order. A var with a literal value wins over its valueFrom, as in the
// kubelet, and is not a reference.
func Refs(c *corev1.Container) []Ref {
	var out []Ref
	for _, e := range c.Env {
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || slices.Contains(excluded, e.Name) {
			continue
		}
		if kind, key, ok := ParseFieldPath(e.ValueFrom.FieldRef.FieldPath); ok {
			out = append(out, Ref{Env: e.Name, Kind: kind, Key: key})
		}
	}
	return out
}

// ReadsMetadata reports whether some container of pod reads a label or
// annotation into its env.
func ReadsMetadata(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if len(Refs(&pod.Spec.Containers[i])) > 0 {
			return true
		}
	}
	return false
}

// ExpectedHash is the hash of c's env from metadata resolved against the
// given labels and annotations: what a container started now would run with.
func ExpectedHash(c *corev1.Container, labels, annotations map[string]string) uint64 {
	return hashRefs(Refs(c), func(r Ref) string {
		if r.Kind == "labels" {
			return labels[r.Key]
		}
		return annotations[r.Key]
	})
}

// CurrentHash is the hash of c's env from metadata as a running container
// has it (env: its environment, see ParseEnv); a var it lacks counts as "".
func CurrentHash(c *corev1.Container, env map[string]string) uint64 {
	return hashRefs(Refs(c), func(r Ref) string { return env[r.Env] })
}

// hashRefs hashes the vars as OpenKruise does: {name, value} pairs sorted by
// name (stable), JSON-encoded as corev1.EnvVar (an empty value omitted, no
// vars at all "null"), that byte slice printed with spew's %#v (Kubernetes'
// DeepHashObject) into FNV-1a 32.
func hashRefs(refs []Ref, value func(Ref) string) uint64 {
	var envs []corev1.EnvVar
	for _, r := range refs {
		envs = append(envs, corev1.EnvVar{Name: r.Env, Value: value(r)})
	}
	slices.SortStableFunc(envs, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(envs) // EnvVar of two strings always encodes
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", b)
	return uint64(h.Sum32())
}

// ParseEnv reads the output of `env` run in a container (NAME=value lines,
// each trimmed) into a map, as OpenKruise's agent does; lines without "="
// are skipped. Values with a newline or edge spaces do not survive it: the
// agent reads the runtime's record of the container's env first (EnvMap).
func ParseEnv(out []byte) map[string]string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return EnvMap(lines)
}

// EnvMap turns an OCI process env ("NAME=value" entries) into a map.
func EnvMap(entries []string) map[string]string {
	env := make(map[string]string, len(entries))
	for _, e := range entries {
		if k, v, ok := strings.Cut(e, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Decode returns the pod's runtime-containers-meta, nil when it has none.
func Decode(pod *corev1.Pod) (*pub.RuntimeContainerMetaSet, error) {
	v, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
	if !ok {
		return nil, nil
	}
	var s pub.RuntimeContainerMetaSet
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("decode %s of pod %s/%s: %w", pub.RuntimeContainerMetaKey, pod.Namespace, pod.Name, err)
	}
	return &s, nil
}

// Encode is the annotation value of set.
func Encode(set *pub.RuntimeContainerMetaSet) (string, error) {
	b, err := json.Marshal(set)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", pub.RuntimeContainerMetaKey, err)
	}
	return string(b), nil
}

// Find returns the entry of set for the container name, nil when there is none.
func Find(set *pub.RuntimeContainerMetaSet, name string) *pub.RuntimeContainerMeta {
	if set == nil {
		return nil
	}
	for i := range set.Containers {
		if set.Containers[i].Name == name {
			return &set.Containers[i]
		}
	}
	return nil
}

// Consistent reports whether every container of pod runs with the env its
// labels/annotations resolve to now, and why not: the container has a
// status, set (the pod's runtime-containers-meta) has an entry for it under
// the containerID of that status, and the entry's extracted hash is
// ExpectedHash. This is OpenKruise's checkAllContainersHashConsistent for
// the extracted hash. A nil set is not consistent.
func Consistent(pod *corev1.Pod, set *pub.RuntimeContainerMetaSet) (bool, string) {
	if set == nil {
		return false, pub.RuntimeContainerMetaKey + " not found"
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := status(pod, c.Name)
		if st == nil {
			return false, fmt.Sprintf("container %s has no status", c.Name)
		}
		m := Find(set, c.Name)
		if m == nil {
			return false, fmt.Sprintf("container %s is not in %s", c.Name, pub.RuntimeContainerMetaKey)
		}
		if m.ContainerID != st.ContainerID {
			return false, fmt.Sprintf("container %s is %s in status but %s in %s", c.Name, st.ContainerID, m.ContainerID, pub.RuntimeContainerMetaKey)
		}
		if want := ExpectedHash(c, pod.Labels, pod.Annotations); m.Hashes.ExtractedEnvFromMetadataHash != want {
			return false, fmt.Sprintf("container %s runs env from metadata hash %d, want %d", c.Name, m.Hashes.ExtractedEnvFromMetadataHash, want)
		}
	}
	return true, ""
}

func status(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
