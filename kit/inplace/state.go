package inplace

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// stamp is how a time is recorded in the state annotation: RFC 3339 has
// whole seconds, so a state built in memory equals the same state decoded.
func stamp(now time.Time) metav1.Time { return metav1.NewTime(now).Rfc3339Copy() }

// NewState returns the state of an in-place update to revision that starts
// at now, before any batch is applied: revision, updateTimestamp and the
// updateImages / updateEnvFromMetadata flags. This is what is written while
// the update waits out a grace period; PlanBatch adds the first batch.
func NewState(revision string, spec Spec, now time.Time) pub.InPlaceUpdateState {
	return pub.InPlaceUpdateState{
		Revision:              revision,
		UpdateTimestamp:       stamp(now),
		UpdateImages:          len(spec.ContainerImages) > 0,
		UpdateEnvFromMetadata: spec.UpdateEnvFromMetadata(),
	}
}

// Start is NewState followed by PlanBatch: the state and the changes of the
// first batch of an update applied at once (no grace period).
func Start(pod *corev1.Pod, revision string, spec Spec, now time.Time) (pub.InPlaceUpdateState, Spec) {
	state := NewState(revision, spec, now)
	return PlanBatch(pod, &state, spec, now)
}

// PlanBatch decides the next batch of spec (see Batches) for pod and returns
// the resulting state and the part of spec to apply now (ApplyToPod).
//
// The returned state is state with:
//   - lastContainerStatuses: the imageID each container of the batch whose
//     image changes reports now (an empty imageID when it has no status yet,
//     so completion waits for it to report one), added to earlier entries;
//   - nextContainerImages / nextContainerRefMetadata: what the later batches
//     change (replacing earlier values), omitted when nothing is left;
//   - preCheckBeforeNext.containersRequiredReady: the batch, when something
//     is left;
//   - containerBatchesRecord: one more entry {timestamp: now, containers}.
//
// The returned spec holds the batch's images and referenced metadata, plus
// all of spec.Metadata (the pod-wide change goes with the first batch;
// specs built by NextBatch have none). Neither pod, state nor spec is
// modified.
func PlanBatch(pod *corev1.Pod, state *pub.InPlaceUpdateState, spec Spec, now time.Time) (pub.InPlaceUpdateState, Spec) {
	out := *state.DeepCopy()
	first, next := Batches(pod, spec)

	apply := Spec{Metadata: spec.DeepCopy().Metadata}
	out.NextContainerImages = nil
	out.NextContainerRefMetadata = nil
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		inBatch := slices.Contains(first, name)
		if image, ok := spec.ContainerImages[name]; ok {
			if inBatch {
				apply.ContainerImages = setKey(apply.ContainerImages, name, image)
				if out.LastContainerStatuses == nil {
					out.LastContainerStatuses = map[string]pub.InPlaceUpdateContainerStatus{}
				}
				out.LastContainerStatuses[name] = pub.InPlaceUpdateContainerStatus{ImageID: imageIDOf(pod, name)}
			} else {
				out.NextContainerImages = setKey(out.NextContainerImages, name, image)
			}
		}
		if meta, ok := spec.ContainerRefMetadata[name]; ok {
			dst := &apply.ContainerRefMetadata
			if !inBatch {
				dst = &out.NextContainerRefMetadata
			}
			if *dst == nil {
				*dst = map[string]metav1.ObjectMeta{}
			}
			(*dst)[name] = refMeta(meta)
		}
	}

	out.PreCheckBeforeNext = nil
	if len(next) > 0 {
		out.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: slices.Clone(first)}
	}
	batch := slices.Clone(first)
	if batch == nil {
		batch = []string{} // recorded as [] rather than null
	}
	out.ContainerBatchesRecord = append(out.ContainerBatchesRecord, pub.InPlaceUpdateContainerBatch{
		Timestamp:  stamp(now),
		Containers: batch,
	})
	return out, apply
}

// Pending reports whether containers remain to be updated in later batches
// (nextContainerImages or nextContainerRefMetadata). Resources left by an
// OpenKruise vertical update (nextContainerResources) are not applied by
// this package and are ignored.
func Pending(state *pub.InPlaceUpdateState) bool {
	return state != nil && (len(state.NextContainerImages) > 0 || len(state.NextContainerRefMetadata) > 0)
}

// NextBatch decides whether the next batch of an in-place update may start
// and what it changes. It may start when
//   - something is pending (Pending),
//   - the pod is not waiting out a grace period (no grace annotation),
//   - every container whose image the previous batches changed runs the new
//     image (the check of UpdateCompleted), and
//   - every container in preCheckBeforeNext.containersRequiredReady reports
//     Ready.
//
// It then plans the next batch from the pending changes (PlanBatch, so the
// remaining containers are split by priority again) and returns the new
// state, the changes to apply and true. Otherwise it returns false and zero
// values. Neither pod nor state is modified.
func NextBatch(pod *corev1.Pod, state *pub.InPlaceUpdateState, now time.Time) (pub.InPlaceUpdateState, Spec, bool) {
	if !Pending(state) || inGrace(pod) || !containersUpdated(pod, state) || !requiredReady(pod, state.PreCheckBeforeNext) {
		return pub.InPlaceUpdateState{}, Spec{}, false
	}
	pending := Spec{ContainerImages: state.NextContainerImages, ContainerRefMetadata: state.NextContainerRefMetadata}
	out, apply := PlanBatch(pod, state, pending.DeepCopy(), now)
	return out, apply, true
}

func requiredReady(pod *corev1.Pod, check *pub.InPlaceUpdatePreCheckBeforeNext) bool {
	if check == nil {
		return true
	}
	for _, name := range check.ContainersRequiredReady {
		cs := containerStatus(pod, name)
		if cs == nil || !cs.Ready {
			return false
		}
	}
	return true
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func imageIDOf(pod *corev1.Pod, name string) string {
	if cs := containerStatus(pod, name); cs != nil {
		return cs.ImageID
	}
	return ""
}

// EncodeState returns the apps.kruise.io/inplace-update-state annotation
// value: the state encoded with encoding/json, byte-for-byte what OpenKruise
// writes for the same state.
func EncodeState(state *pub.InPlaceUpdateState) (string, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return "", fmt.Errorf("inplace: encoding %s: %w", pub.InPlaceUpdateStateKey, err)
	}
	return string(b), nil
}

// DecodeState reads the in-place update state of a pod (the
// apps.kruise.io/inplace-update-state annotation, or its legacy key). It
// returns nil and no error when the pod has none.
func DecodeState(pod *corev1.Pod) (*pub.InPlaceUpdateState, error) {
	v, ok := pub.GetInPlaceUpdateState(pod)
	if !ok {
		return nil, nil
	}
	state := &pub.InPlaceUpdateState{}
	if err := json.Unmarshal([]byte(v), state); err != nil {
		return nil, fmt.Errorf("inplace: decoding %s of pod %s/%s: %w", pub.InPlaceUpdateStateKey, pod.Namespace, pod.Name, err)
	}
	return state, nil
}

// ApplyToPod returns a deep copy of pod with batch applied — container
// images replaced, labels/annotations set and removed — and state written
// to the apps.kruise.io/inplace-update-state annotation (the legacy key and
// the grace annotation are removed). Revision labels, lifecycle and the
// InPlaceUpdateReady condition are the caller's. pod is not modified.
func ApplyToPod(pod *corev1.Pod, batch Spec, state *pub.InPlaceUpdateState) (*corev1.Pod, error) {
	value, err := EncodeState(state)
	if err != nil {
		return nil, err
	}
	out := pod.DeepCopy()
	for i := range out.Spec.Containers {
		if image, ok := batch.ContainerImages[out.Spec.Containers[i].Name]; ok {
			out.Spec.Containers[i].Image = image
		}
	}
	applyKV(&out.Labels, batch.Metadata.Labels, batch.Metadata.RemovedLabels)
	applyKV(&out.Annotations, batch.Metadata.Annotations, batch.Metadata.RemovedAnnotations)
	for _, name := range sortedKeys(batch.ContainerRefMetadata) {
		meta := batch.ContainerRefMetadata[name]
		applyKV(&out.Labels, meta.Labels, nil)
		applyKV(&out.Annotations, meta.Annotations, nil)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[pub.InPlaceUpdateStateKey] = value
	delete(out.Annotations, pub.InPlaceUpdateStateKeyOld)
	delete(out.Annotations, pub.InPlaceUpdateGraceKey)
	return out, nil
}

func applyKV(dst *map[string]string, set map[string]string, remove []string) {
	for _, k := range remove {
		delete(*dst, k)
	}
	for k, v := range set {
		*dst = setKey(*dst, k, v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
