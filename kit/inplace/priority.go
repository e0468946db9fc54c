package inplace

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// barrierKeyPrefix prefixes the ConfigMap key ("p_<priority>") that the
// KRUISE_CONTAINER_BARRIER env of a container points at.
const barrierKeyPrefix = "p_"

// Priority is a container's launch priority. Set is false when the
// container has none.
type Priority struct {
	Value int
	Set   bool
}

// ContainerPriorities returns the launch priority of each container of the
// pod, by index (Set is false for a container without one). Sources, first
// match wins:
//
//  1. the KRUISE_CONTAINER_BARRIER env injected by OpenKruise's pod webhook
//     (valueFrom.configMapKeyRef.key "p_<priority>"). When any container
//     carries it, it is authoritative: containers without it (e.g. injected
//     later) have no priority.
//  2. the pod annotation apps.kruise.io/container-launch-priority: Ordered
//     (with at least two containers): priority = −index.
//  3. container env KRUISE_CONTAINER_PRIORITY (an integer): containers
//     without it count as 0 — but only when some value is non-zero and not
//     all values are equal, and every value parses; otherwise no container
//     has a priority. This is what the webhook would have injected.
func ContainerPriorities(pod *corev1.Pod) []Priority {
	cs := pod.Spec.Containers
	out := make([]Priority, len(cs))

	barrier := false
	for i := range cs {
		for _, e := range cs[i].Env {
			if e.Name != pub.ContainerLaunchBarrierEnvName {
				continue
			}
			barrier = true
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				key := e.ValueFrom.ConfigMapKeyRef.Key
				if rest, found := strings.CutPrefix(key, barrierKeyPrefix); found {
					if v, err := strconv.Atoi(rest); err == nil {
						out[i] = Priority{v, true}
					}
				}
			}
			break
		}
	}
	if barrier || len(cs) < 2 {
		return out
	}

	if pod.Annotations[pub.ContainerLaunchPriorityKey] == pub.ContainerLaunchOrdered {
		for i := range out {
			out[i] = Priority{-i, true}
		}
		return out
	}

	values := make([]int, len(cs))
	for i := range cs {
		for _, e := range cs[i].Env {
			if e.Name != pub.ContainerLaunchPriorityEnvName {
				continue
			}
			v, err := strconv.Atoi(e.Value)
			if err != nil {
				return out // the webhook would have rejected the pod: no priorities
			}
			values[i] = v
		}
	}
	if !slices.ContainsFunc(values, func(v int) bool { return v != values[0] }) {
		return out // all equal (all 0 included): the webhook injects nothing
	}
	for i, v := range values {
		out[i] = Priority{v, true}
	}
	return out
}

// Batches splits the containers a spec changes (a new image, or env read
// from a changed label/annotation) into the batch to update now and the
// rest, by container launch priority (see ContainerPriorities):
//
//   - the changed containers with the highest priority, plus every changed
//     container without a priority, form the first batch;
//   - a changed container that reads (ContainerRefMetadata) a label or
//     annotation key also read by a container of the batch joins it, since
//     that key changes for both at once (transitively);
//   - every other changed container is in next, to be updated later,
//     highest priority first (call Batches again on what remains).
//
// Without priorities every changed container is in first. Spec entries for
// containers the pod does not have are ignored. Both slices are sorted by
// name; the pod is not modified.
func Batches(pod *corev1.Pod, spec Spec) (first, next []string) {
	ps := ContainerPriorities(pod)
	var changed []string
	inFirst := map[string]bool{}
	var best *int
	var bestNames []string
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		_, img := spec.ContainerImages[name]
		_, meta := spec.ContainerRefMetadata[name]
		if !img && !meta {
			continue
		}
		changed = append(changed, name)
		p := ps[i]
		switch {
		case !p.Set:
			inFirst[name] = true
		case best == nil || p.Value > *best:
			v := p.Value
			best, bestNames = &v, []string{name}
		case p.Value == *best:
			bestNames = append(bestNames, name)
		}
	}
	for _, name := range bestNames {
		inFirst[name] = true
	}
	joinSharedMetadata(changed, inFirst, spec.ContainerRefMetadata)

	for _, name := range changed {
		if inFirst[name] {
			first = append(first, name)
		} else {
			next = append(next, name)
		}
	}
	slices.Sort(first)
	slices.Sort(next)
	return first, next
}

// joinSharedMetadata adds to batch every candidate whose referenced
// labels/annotations share a key with a container already in the batch,
// until nothing changes.
func joinSharedMetadata(candidates []string, batch map[string]bool, refs map[string]metav1.ObjectMeta) {
	if len(refs) == 0 {
		return
	}
	for grew := true; grew; {
		grew = false
		keys := map[metaRef]bool{}
		for name := range batch {
			for k := range refs[name].Labels {
				keys[metaRef{"labels", k}] = true
			}
			for k := range refs[name].Annotations {
				keys[metaRef{"annotations", k}] = true
			}
		}
		for _, name := range candidates {
			if batch[name] {
				continue
			}
			meta, ok := refs[name]
			if !ok {
				continue
			}
			if sharesKey(meta.Labels, "labels", keys) || sharesKey(meta.Annotations, "annotations", keys) {
				batch[name] = true
				grew = true
			}
		}
	}
}

func sharesKey(m map[string]string, kind string, keys map[metaRef]bool) bool {
	for k := range m {
		if keys[metaRef{kind, k}] {
			return true
		}
	}
	return false
}
