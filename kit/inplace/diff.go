package inplace

import (
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/containermeta"
	"github.com/flotilla-dev/flotilla/kit/revision"
)

// Spec is what an in-place update changes in a pod. The zero value changes
// nothing. Maps are nil when empty.
type Spec struct {
	// ContainerImages maps a container name to its new image.
	ContainerImages map[string]string
	// Metadata is the pod-wide label/annotation change, applied with the
	// first batch. It excludes keys moved to ContainerRefMetadata.
	Metadata MetadataChange
	// ContainerRefMetadata maps a container name to the labels/annotations
	// (added or changed, never removed) that its env reads through the
	// downward API (fieldRef metadata.labels['k'] / metadata.annotations['k']).
	// Those keys are applied with that container's batch, and the container
	// must be restarted for the new value to reach its env ("update env from
	// metadata") — a node agent's job. Only Labels and Annotations are set.
	ContainerRefMetadata map[string]metav1.ObjectMeta
}

// MetadataChange is a change of pod labels and annotations.
type MetadataChange struct {
	// Labels and Annotations are keys to add or replace, with their new value.
	Labels      map[string]string
	Annotations map[string]string
	// RemovedLabels and RemovedAnnotations are keys to delete, sorted.
	RemovedLabels      []string
	RemovedAnnotations []string
}

// Empty reports whether the change does nothing.
func (m MetadataChange) Empty() bool {
	return len(m.Labels) == 0 && len(m.Annotations) == 0 &&
		len(m.RemovedLabels) == 0 && len(m.RemovedAnnotations) == 0
}

// Empty reports whether the spec changes nothing in a pod.
func (s Spec) Empty() bool {
	return len(s.ContainerImages) == 0 && s.Metadata.Empty() && len(s.ContainerRefMetadata) == 0
}

// UpdateEnvFromMetadata reports whether some container must be restarted
// because env it reads from labels/annotations changes.
func (s Spec) UpdateEnvFromMetadata() bool { return len(s.ContainerRefMetadata) > 0 }

// Why a Diff result cannot be applied in place, for events and logs.
const (
	// NotInPlaceable: the revisions differ in more than images and labels/annotations.
	NotInPlaceable = "only container images and template labels/annotations may change in place"
	// NotInPlaceEnvFromMetadata: the change reaches container env through
	// fieldRef metadata.labels/annotations.
	NotInPlaceEnvFromMetadata = "the change alters labels/annotations that container env reads " +
		"(fieldRef metadata.labels/annotations), and no node agent restarts containers for that"
	// NotInPlaceNoAgentRecord: the workload's gate is on, but no node agent
	// has recorded the pod's containers.
	NotInPlaceNoAgentRecord = "the change alters labels/annotations that container env reads, and no node agent " +
		"has recorded this pod's containers (annotation " + pub.RuntimeContainerMetaKey + "), so none would restart them"
)

// Refusal says why spec (the result of Diff, with ok) cannot be applied in
// place when no node agent restarts containers for env from metadata
// (RefusalWithAgent with envFromMetadata false).
func Refusal(spec Spec, ok bool) string { return RefusalWithAgent(spec, ok, false) }

// RefusalWithAgent says why spec (the result of Diff, with ok) cannot be
// applied in place, or "" when it can. envFromMetadata is the workload's
// InPlaceUpdateEnvFromMetadata gate (forced off with KruiseDaemon): on, a
// node agent (probe-agent) restarts the containers whose env reads a changed
// label or annotation, and UpdateCompleted waits for those restarts; off,
// nothing would restart them and the pod would be declared updated while
// its containers keep the stale value, so such a change is not in-place-able.
func RefusalWithAgent(spec Spec, ok, envFromMetadata bool) string {
	switch {
	case !ok:
		return NotInPlaceable
	case spec.UpdateEnvFromMetadata() && !envFromMetadata:
		return NotInPlaceEnvFromMetadata
	}
	return ""
}

// RefusalForPod is RefusalWithAgent for one pod, gate being the workload's
// InPlaceUpdateEnvFromMetadata: with the gate on, a change env reads from
// metadata is in place only once a node agent has recorded the pod's
// containers (it records exactly the pods it will restart: on its node,
// restartPolicy Always, InPlaceUpdateReady gate, env from metadata). A pod
// on a node without an agent would otherwise wait for a restart that never
// comes; it is recreated instead (or refused under InPlaceOnly), visibly.
func RefusalForPod(pod *corev1.Pod, spec Spec, ok, gate bool) string {
	if why := RefusalWithAgent(spec, ok, gate); why != "" {
		return why
	}
	if spec.UpdateEnvFromMetadata() && pod.Annotations[pub.RuntimeContainerMetaKey] == "" {
		return NotInPlaceNoAgentRecord
	}
	return ""
}

// DeepCopy returns a copy sharing no maps or slices with s.
func (s Spec) DeepCopy() Spec {
	out := Spec{
		ContainerImages: maps.Clone(s.ContainerImages),
		Metadata: MetadataChange{
			Labels:             maps.Clone(s.Metadata.Labels),
			Annotations:        maps.Clone(s.Metadata.Annotations),
			RemovedLabels:      slices.Clone(s.Metadata.RemovedLabels),
			RemovedAnnotations: slices.Clone(s.Metadata.RemovedAnnotations),
		},
	}
	if s.ContainerRefMetadata != nil {
		out.ContainerRefMetadata = make(map[string]metav1.ObjectMeta, len(s.ContainerRefMetadata))
		for name, meta := range s.ContainerRefMetadata {
			out.ContainerRefMetadata[name] = refMeta(meta)
		}
	}
	return out
}

// refMeta copies the labels and annotations of meta (the only fields a
// ContainerRefMetadata entry carries).
func refMeta(meta metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Labels: maps.Clone(meta.Labels), Annotations: maps.Clone(meta.Annotations)}
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	m[k] = v
	return m
}

// Diff compares the data of two ControllerRevisions of the same workload
// ({"spec":{"template":{…}}}, see kit/revision.TemplatePatch) and reports
// whether a pod at the old revision can be moved to the new one in place,
// and what that changes.
//
// Only two kinds of change qualify:
//   - spec.template.spec.containers[i].image, for a container present at the
//     same index with the same name in both revisions (containers are
//     otherwise compared field by field, so any other container change — env,
//     ports, resources, probes, … — or a container added, removed or
//     reordered is not in-place-able);
//   - spec.template.metadata.labels / .annotations: keys added, changed or
//     removed.
//
// Everything else — the rest of the pod spec (volumes, initContainers,
// readinessGates, …), other template metadata fields, anything outside the
// template — must be equal. Identical revisions give an empty Spec and true.
// Undecodable data gives false.
//
// Added or changed labels/annotations that some container's env reads
// through the downward API go to Spec.ContainerRefMetadata for that
// container (removals always stay pod-wide: OpenKruise restarts nothing for
// them either). Resource changes (vertical scaling) are not in-place-able
// here.
//
// The comparison is structural: both documents are decoded into generic
// maps and compared value by value, which is insensitive to key order and
// whitespace.
func Diff(oldRevisionData, newRevisionData []byte) (Spec, bool) {
	var oldRoot, newRoot map[string]any
	if json.Unmarshal(oldRevisionData, &oldRoot) != nil || json.Unmarshal(newRevisionData, &newRoot) != nil {
		return Spec{}, false
	}
	oldSpec, ok1 := asMap(oldRoot["spec"])
	newSpec, ok2 := asMap(newRoot["spec"])
	if !ok1 || !ok2 || !equalExcept(oldRoot, newRoot, "spec") || !equalExcept(oldSpec, newSpec, "template") {
		return Spec{}, false
	}
	oldTmpl, ok1 := asMap(oldSpec["template"])
	newTmpl, ok2 := asMap(newSpec["template"])
	if !ok1 || !ok2 || oldTmpl == nil || newTmpl == nil || !equalExcept(oldTmpl, newTmpl, "metadata", "spec") {
		return Spec{}, false
	}
	oldPod, ok1 := asMap(oldTmpl["spec"])
	newPod, ok2 := asMap(newTmpl["spec"])
	if !ok1 || !ok2 {
		return Spec{}, false
	}
	var s Spec
	if !diffPodSpec(oldPod, newPod, &s) {
		return Spec{}, false
	}
	oldMeta, ok1 := asMap(oldTmpl["metadata"])
	newMeta, ok2 := asMap(newTmpl["metadata"])
	if !ok1 || !ok2 || !diffMetadata(oldMeta, newMeta, newPod, &s) {
		return Spec{}, false
	}
	return s, true
}

// diffPodSpec accepts only container image changes.
func diffPodSpec(oldPod, newPod map[string]any, s *Spec) bool {
	if !equalExcept(oldPod, newPod, "containers") {
		return false
	}
	oldCs, ok1 := oldPod["containers"].([]any)
	newCs, ok2 := newPod["containers"].([]any)
	if (!ok1 && oldPod["containers"] != nil) || (!ok2 && newPod["containers"] != nil) || len(oldCs) != len(newCs) {
		return false
	}
	for i := range oldCs {
		oc, ok1 := oldCs[i].(map[string]any)
		nc, ok2 := newCs[i].(map[string]any)
		if !ok1 || !ok2 || !equalExcept(oc, nc, "image") {
			return false
		}
		oi, ni := oc["image"], nc["image"]
		if jsonEqual(oi, ni) {
			continue
		}
		name, _ := oc["name"].(string)
		newImage, ok := ni.(string)
		if _, wasString := oi.(string); !wasString || !ok || name == "" {
			return false // an image added or removed, or a malformed container
		}
		if s.ContainerImages == nil {
			s.ContainerImages = make(map[string]string)
		}
		s.ContainerImages[name] = newImage
	}
	return true
}

// diffMetadata accepts only label and annotation changes.
func diffMetadata(oldMeta, newMeta, newPod map[string]any, s *Spec) bool {
	if !equalExcept(oldMeta, newMeta, "labels", "annotations") {
		return false
	}
	var refs map[metaRef][]string // built lazily: only when some key is set
	for _, kind := range [...]string{"labels", "annotations"} {
		oldKV, ok1 := stringMap(oldMeta[kind])
		newKV, ok2 := stringMap(newMeta[kind])
		if !ok1 || !ok2 {
			return false
		}
		set, removed := &s.Metadata.Labels, &s.Metadata.RemovedLabels
		if kind == "annotations" {
			set, removed = &s.Metadata.Annotations, &s.Metadata.RemovedAnnotations
		}
		for k, v := range newKV {
			if old, ok := oldKV[k]; ok && old == v {
				continue
			}
			if refs == nil {
				refs = envMetadataRefs(newPod)
			}
			readers := refs[metaRef{kind, k}]
			if len(readers) == 0 {
				*set = setKey(*set, k, v)
				continue
			}
			for _, c := range readers {
				if s.ContainerRefMetadata == nil {
					s.ContainerRefMetadata = make(map[string]metav1.ObjectMeta)
				}
				meta := s.ContainerRefMetadata[c]
				if kind == "labels" {
					meta.Labels = setKey(meta.Labels, k, v)
				} else {
					meta.Annotations = setKey(meta.Annotations, k, v)
				}
				s.ContainerRefMetadata[c] = meta
			}
		}
		for k := range oldKV {
			if _, ok := newKV[k]; !ok {
				*removed = append(*removed, k)
			}
		}
		slices.Sort(*removed)
	}
	return true
}

// metaRef names one label ("labels") or annotation ("annotations") key.
type metaRef struct{ kind, key string }

// envMetadataRefs indexes, per label/annotation key, the containers (by
// name, in spec order) whose env reads it through a downward-API fieldRef.
func envMetadataRefs(pod map[string]any) map[metaRef][]string {
	refs := map[metaRef][]string{}
	containers, _ := pod["containers"].([]any)
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		name, _ := cm["name"].(string)
		env, _ := cm["env"].([]any)
		for _, e := range env {
			em, _ := e.(map[string]any)
			from, _ := em["valueFrom"].(map[string]any)
			ref, _ := from["fieldRef"].(map[string]any)
			path, _ := ref["fieldPath"].(string)
			r, ok := parseMetaFieldPath(path)
			if !ok || name == "" {
				continue
			}
			if readers := refs[r]; len(readers) == 0 || readers[len(readers)-1] != name {
				refs[r] = append(readers, name)
			}
		}
	}
	return refs
}

// parseMetaFieldPath parses metadata.labels['k'] and metadata.annotations['k']
// (containermeta.ParseFieldPath: the node agent reads the same references).
func parseMetaFieldPath(path string) (metaRef, bool) {
	kind, key, ok := containermeta.ParseFieldPath(path)
	return metaRef{kind, key}, ok
}

// equalExcept reports whether a and b hold equal values under every key but
// the skipped ones. A member null on one side and missing on the other is
// equal (revision.EqualJSON): both mean "unset", and OpenKruise v1.9 writes
// "creationTimestamp":null in template metadata where newer encoders omit
// it, so the same template must not read as a metadata change.
func equalExcept(a, b map[string]any, skip ...string) bool {
	return revision.EqualMembers(a, b, func(k string) bool { return slices.Contains(skip, k) })
}

// jsonEqual compares two values decoded by encoding/json (revision.EqualJSON).
func jsonEqual(a, b any) bool { return revision.EqualJSON(a, b) }

// asMap accepts a JSON object or an absent/null value (nil map).
func asMap(v any) (map[string]any, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// stringMap accepts a JSON object of strings or an absent/null value.
func stringMap(v any) (map[string]string, bool) {
	m, ok := asMap(v)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out[k] = s
	}
	return out, true
}
