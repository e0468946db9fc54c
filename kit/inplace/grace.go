package inplace

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// GraceSpec is an in-place update delayed by
// inPlaceUpdateStrategy.gracePeriodSeconds: the pod is marked
// InPlaceUpdateReady=False and gets the state of NewState at once, but its
// containers are changed only when the grace period has elapsed
// (GraceRemaining). Until then the spec waits in the pod annotation
// apps.kruise.io/inplace-update-grace.
type GraceSpec struct {
	Revision     string
	Spec         Spec
	GraceSeconds int32
}

// graceWire is the annotation's JSON, the shape OpenKruise writes, so that a
// pod caught in its grace period by a switch between the two controllers is
// finished by either. The pod-wide metadata travels as a strategic-merge
// patch of the pod ({"metadata":{"labels":{"k":"v","gone":null},…}}),
// base64-encoded because the field is bytes.
type graceWire struct {
	Revision              string                       `json:"revision"`
	ContainerImages       map[string]string            `json:"containerImages,omitempty"`
	ContainerRefMetadata  map[string]metav1.ObjectMeta `json:"containerRefMetadata,omitempty"`
	MetaDataPatch         []byte                       `json:"metaDataPatch,omitempty"`
	UpdateEnvFromMetadata bool                         `json:"updateEnvFromMetadata,omitempty"`
	GraceSeconds          int32                        `json:"graceSeconds,omitempty"`
}

// EncodeGrace returns the apps.kruise.io/inplace-update-grace annotation value.
func EncodeGrace(g GraceSpec) (string, error) {
	w := graceWire{
		Revision:              g.Revision,
		ContainerImages:       g.Spec.ContainerImages,
		ContainerRefMetadata:  g.Spec.ContainerRefMetadata,
		UpdateEnvFromMetadata: g.Spec.UpdateEnvFromMetadata(),
		GraceSeconds:          g.GraceSeconds,
	}
	if m := g.Spec.Metadata; !m.Empty() {
		meta := map[string]map[string]*string{}
		for kind, kv := range map[string]struct {
			set    map[string]string
			remove []string
		}{"labels": {m.Labels, m.RemovedLabels}, "annotations": {m.Annotations, m.RemovedAnnotations}} {
			if len(kv.set) == 0 && len(kv.remove) == 0 {
				continue
			}
			patch := make(map[string]*string, len(kv.set)+len(kv.remove))
			for _, k := range kv.remove {
				patch[k] = nil
			}
			for k, v := range kv.set {
				patch[k] = &v
			}
			meta[kind] = patch
		}
		b, err := json.Marshal(map[string]any{"metadata": meta})
		if err != nil {
			return "", fmt.Errorf("inplace: encoding metadata patch: %w", err)
		}
		w.MetaDataPatch = b
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("inplace: encoding %s: %w", pub.InPlaceUpdateGraceKey, err)
	}
	return string(b), nil
}

// DecodeGrace parses an apps.kruise.io/inplace-update-grace annotation value.
// The metadata patch may only set or delete individual labels and
// annotations (what EncodeGrace and OpenKruise write for template
// metadata); anything else, such as deleting a whole map, is an error — the
// caller should then drop the grace annotation and update the pod afresh.
func DecodeGrace(value string) (GraceSpec, error) {
	var w graceWire
	if err := json.Unmarshal([]byte(value), &w); err != nil {
		return GraceSpec{}, fmt.Errorf("inplace: decoding %s: %w", pub.InPlaceUpdateGraceKey, err)
	}
	g := GraceSpec{
		Revision:     w.Revision,
		GraceSeconds: w.GraceSeconds,
		Spec:         Spec{ContainerImages: w.ContainerImages, ContainerRefMetadata: w.ContainerRefMetadata},
	}
	if len(g.Spec.ContainerImages) == 0 {
		g.Spec.ContainerImages = nil
	}
	if len(g.Spec.ContainerRefMetadata) == 0 {
		g.Spec.ContainerRefMetadata = nil
	} else {
		for name, meta := range g.Spec.ContainerRefMetadata {
			g.Spec.ContainerRefMetadata[name] = refMeta(meta)
		}
	}
	if len(w.MetaDataPatch) == 0 {
		return g, nil
	}
	var patch map[string]map[string]json.RawMessage
	if err := json.Unmarshal(w.MetaDataPatch, &patch); err != nil {
		return GraceSpec{}, fmt.Errorf("inplace: decoding metadata patch of %s: %w", pub.InPlaceUpdateGraceKey, err)
	}
	for top, fields := range patch {
		if top != "metadata" {
			return GraceSpec{}, fmt.Errorf("inplace: unsupported field %q in metadata patch of %s", top, pub.InPlaceUpdateGraceKey)
		}
		for field, raw := range fields {
			var kv map[string]*string
			if field != "labels" && field != "annotations" || string(raw) == "null" || json.Unmarshal(raw, &kv) != nil {
				return GraceSpec{}, fmt.Errorf("inplace: unsupported metadata.%s in metadata patch of %s", field, pub.InPlaceUpdateGraceKey)
			}
			set, remove := &g.Spec.Metadata.Labels, &g.Spec.Metadata.RemovedLabels
			if field == "annotations" {
				set, remove = &g.Spec.Metadata.Annotations, &g.Spec.Metadata.RemovedAnnotations
			}
			for k, v := range kv {
				if v == nil {
					*remove = append(*remove, k)
				} else {
					*set = setKey(*set, k, *v)
				}
			}
			slices.Sort(*remove)
		}
	}
	return g, nil
}

// GraceRemaining is how long an update started at state.updateTimestamp
// must still wait before its containers are changed, with a grace period of
// gracePeriodSeconds, at now: 0 once it has elapsed (or without a grace
// period or state), otherwise rounded up to a whole second so that a
// requeue after it never lands just short of the end.
func GraceRemaining(state *pub.InPlaceUpdateState, gracePeriodSeconds int32, now time.Time) time.Duration {
	if state == nil || gracePeriodSeconds <= 0 {
		return 0
	}
	left := state.UpdateTimestamp.Add(time.Duration(gracePeriodSeconds) * time.Second).Sub(now)
	if left <= 0 {
		return 0
	}
	if rem := left % time.Second; rem != 0 {
		left += time.Second - rem
	}
	return left
}
