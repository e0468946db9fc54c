package revision

import (
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TemplatePatch returns the ControllerRevision data for a workload whose
// history is its pod template:
//
//	{"spec":{"template":{"$patch":"replace", <template fields>}}}
//
// The template is encoded with encoding/json, decoded into generic maps and
// encoded again — the same round trip OpenKruise and kubectl-kruise make —
// so object keys come out sorted at every level, '<', '>' and '&' are
// escaped, and the bytes depend only on the template's content (never on map
// iteration order). Numbers pass through float64 as they do in OpenKruise;
// integers beyond 2^53 would lose precision there too.
//
// The "$patch":"replace" directive makes `kubectl-kruise rollout undo`
// replace the whole template when it applies the data as a patch.
//
// The template metadata always carries "creationTimestamp":null unless the
// template sets one. OpenKruise v1.9 encodes with Kubernetes 1.32 types,
// where metav1.ObjectMeta writes its zero creationTimestamp as null;
// Kubernetes 1.33+ types omit it (omitzero). Writing it keeps the bytes —
// and so the revision hash and name — equal to OpenKruise's for the same
// template (CloneSet getPatch, Advanced StatefulSet getPatch, Advanced
// DaemonSet's patch all encode the whole object), so a takeover in either
// direction finds the other's revision. Revisions written without it (by
// Flotilla before this encoding) are still recognised: see Equivalent.
func TemplatePatch(template *corev1.PodTemplateSpec) ([]byte, error) {
	if template == nil {
		return nil, errors.New("revision: nil pod template")
	}
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("revision: encoding pod template: %w", err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("revision: decoding pod template: %w", err)
	}
	NullCreationTimestamp(generic)
	generic["$patch"] = "replace"
	out, err := json.Marshal(map[string]any{
		"spec": map[string]any{"template": generic},
	})
	if err != nil {
		return nil, fmt.Errorf("revision: encoding revision data: %w", err)
	}
	return out, nil
}

// NullCreationTimestamp gives a decoded object's metadata a null
// creationTimestamp unless it has one, as Kubernetes 1.32 types (OpenKruise
// v1.9's) encode a zero timestamp; see TemplatePatch.
func NullCreationTimestamp(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if _, ok := meta["creationTimestamp"]; !ok {
		meta["creationTimestamp"] = nil
	}
}

// Template decodes the pod template stored in a revision's data by
// TemplatePatch.
func Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decode revision %s: %w", rev.Name, err)
	}
	return &data.Spec.Template, nil
}
