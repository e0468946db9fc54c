package lifecycle

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/podreadiness"
	corev1 "k8s.io/api/core/v1"
)

// The KruisePodReady keys written for markPodNotReady. Wire contract: the
// same {userAgent, key} pairs OpenKruise writes.
const (
	ReadinessUserAgent = "Lifecycle"
	PreDeleteHookKey   = "preDeleteHook"
	PreUpdateHookKey   = "preUpdateHook"
)

// PreDeleteKey is the KruisePodReady key held while a markPodNotReady
// preDelete hook keeps the pod in PreparingDelete.
func PreDeleteKey() podreadiness.Key {
	return podreadiness.Key{UserAgent: ReadinessUserAgent, Key: PreDeleteHookKey}
}

// PreUpdateKey is the KruisePodReady key held from PreparingUpdate until
// Updated when the inPlaceUpdate hook has markPodNotReady.
func PreUpdateKey() podreadiness.Key {
	return podreadiness.Key{UserAgent: ReadinessUserAgent, Key: PreUpdateHookKey}
}

// State returns the pod's lifecycle state label, "" when absent.
func State(pod *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// IsHooked reports whether the pod carries any of the hook's labels (with the
// handler's value) or finalizers. A nil hook hooks nothing.
func IsHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; ok && got == v {
			return true
		}
	}
	for _, f := range hook.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			return true
		}
	}
	return false
}

// IsAllHooked reports whether the pod carries every one of the hook's labels
// (with the handler's value) and finalizers. A nil hook is never all-hooked;
// a hook with no labels and no finalizers always is.
func IsAllHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil || pod == nil {
		return false
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			return false
		}
	}
	return true
}

// MarksPodNotReady reports whether the preDelete or inPlaceUpdate hook sets
// markPodNotReady. Such a workload never cancels a PreparingDelete.
func MarksPodNotReady(lc *pub.Lifecycle) bool {
	return lc != nil && (marks(lc.PreDelete) || marks(lc.InPlaceUpdate))
}

func marks(h *pub.LifecycleHook) bool { return h != nil && h.MarkPodNotReady }

// Patch is one lifecycle write to a pod. The zero Patch writes nothing.
type Patch struct {
	// State is the new lifecycle state label; "" leaves it (and the
	// timestamp annotation) alone.
	State pub.LifecycleStateType
	// Timestamp is written, RFC3339 in UTC, to the timestamp annotation
	// together with State.
	Timestamp time.Time
	// Labels are set on the pod (the inPlaceUpdate hook's labels, re-added on
	// Updated → PreparingUpdate).
	Labels map[string]string
	// Finalizers are added to the pod (likewise).
	Finalizers []string
	// AddNotReady / RemoveNotReady are KruisePodReady keys to add / remove
	// (through pods/status).
	AddNotReady    []podreadiness.Key
	RemoveNotReady []podreadiness.Key
}

// IsZero reports whether the patch writes nothing.
func (p Patch) IsZero() bool {
	return !p.HasMetadata() && len(p.AddNotReady) == 0 && len(p.RemoveNotReady) == 0
}

// HasMetadata reports whether the patch changes labels, annotations or
// finalizers.
func (p Patch) HasMetadata() bool {
	return p.State != "" || len(p.Labels) > 0 || len(p.Finalizers) > 0
}

// MetadataPatch returns the strategic merge patch body for the metadata part,
// e.g.
//
//	{"metadata":{"annotations":{"lifecycle.apps.kruise.io/timestamp":"2026-01-02T03:04:05Z"},
//	             "finalizers":["example.com/hook"],
//	             "labels":{"example.com/hook":"true","lifecycle.apps.kruise.io/state":"PreparingUpdate"}}}
//
// or nil when HasMetadata is false. Finalizers merge into the pod's list
// (metadata.finalizers has patch strategy merge), labels and annotations
// into their maps.
func (p Patch) MetadataPatch() []byte {
	if !p.HasMetadata() {
		return nil
	}
	type metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Finalizers  []string          `json:"finalizers,omitempty"`
	}
	m := metadata{Finalizers: p.Finalizers}
	if len(p.Labels) > 0 || p.State != "" {
		m.Labels = make(map[string]string, len(p.Labels)+1)
		for k, v := range p.Labels {
			m.Labels[k] = v
		}
	}
	if p.State != "" {
		m.Labels[pub.LifecycleStateKey] = string(p.State)
		m.Annotations = map[string]string{pub.LifecycleTimestampKey: timestamp(p.Timestamp)}
	}
	b, err := json.Marshal(struct {
		Metadata metadata `json:"metadata"`
	}{m})
	if err != nil { // cannot happen: strings only
		panic(err)
	}
	return b
}

// ApplyMetadata applies the metadata part of the patch to pod, which must be
// the caller's own copy (never a cached object). It is for writes that update
// the whole pod, e.g. the in-place update setting Updating in the same write
// that changes the images. Readiness keys are not applied.
func (p Patch) ApplyMetadata(pod *corev1.Pod) {
	if len(p.Labels) > 0 || p.State != "" {
		if pod.Labels == nil {
			pod.Labels = make(map[string]string, len(p.Labels)+1)
		}
		for k, v := range p.Labels {
			pod.Labels[k] = v
		}
	}
	if p.State != "" {
		pod.Labels[pub.LifecycleStateKey] = string(p.State)
		if pod.Annotations == nil {
			pod.Annotations = make(map[string]string, 1)
		}
		pod.Annotations[pub.LifecycleTimestampKey] = timestamp(p.Timestamp)
	}
	for _, f := range p.Finalizers {
		if !slices.Contains(pod.Finalizers, f) {
			pod.Finalizers = append(pod.Finalizers, f)
		}
	}
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// SetState builds the patch moving pod to state to at now:
//
//   - the state label and timestamp annotation, unless the pod is already in
//     that state;
//   - with markPodNotReady, entering PreparingDelete adds PreDeleteKey and
//     entering PreparingUpdate adds PreUpdateKey (also when the pod is already
//     in that state but lacks the key, so a lost key is restored);
//   - Updated removes PreUpdateKey; Normal and PreparingNormal remove both
//     keys (regardless of markPodNotReady, see the package doc).
//
// Readiness keys are included only when they change something on this pod
// (podreadiness rules: keys are only added on pods with the KruisePodReady
// gate), so IsZero means there is nothing to write. The pod is not modified.
func SetState(pod *corev1.Pod, to pub.LifecycleStateType, markPodNotReady bool, now time.Time) Patch {
	var p Patch
	if State(pod) != to {
		p.State, p.Timestamp = to, now
	}
	switch to {
	case pub.LifecycleStatePreparingDelete:
		if markPodNotReady {
			p.addKey(pod, PreDeleteKey(), now)
		}
	case pub.LifecycleStatePreparingUpdate:
		if markPodNotReady {
			p.addKey(pod, PreUpdateKey(), now)
		}
	case pub.LifecycleStateUpdated:
		p.removeKey(pod, PreUpdateKey())
	case pub.LifecycleStateNormal, pub.LifecycleStatePreparingNormal:
		p.removeKey(pod, PreDeleteKey())
		p.removeKey(pod, PreUpdateKey())
	}
	return p
}

// SetStateWithHook is SetState with hook's markPodNotReady that, when the
// state changes, also re-adds the hook's labels and finalizers the pod lacks.
// It is the Updated → PreparingUpdate transition for the next revision: the
// hook is put back so the user's controller gets to run its pre-update work
// again. A nil hook behaves as SetState without markPodNotReady.
func SetStateWithHook(pod *corev1.Pod, to pub.LifecycleStateType, hook *pub.LifecycleHook, now time.Time) Patch {
	p := SetState(pod, to, marks(hook), now)
	if p.State == "" || hook == nil {
		return p
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			if p.Labels == nil {
				p.Labels = make(map[string]string, len(hook.LabelsHandler))
			}
			p.Labels[k] = v
		}
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) && !slices.Contains(p.Finalizers, f) {
			p.Finalizers = append(p.Finalizers, f)
		}
	}
	return p
}

func (p *Patch) addKey(pod *corev1.Pod, k podreadiness.Key, now time.Time) {
	if changed, _ := podreadiness.AddNotReadyKey(pod, k, now); changed {
		p.AddNotReady = append(p.AddNotReady, k)
	}
}

func (p *Patch) removeKey(pod *corev1.Pod, k podreadiness.Key) {
	if podreadiness.HasNotReadyKey(pod, k) {
		p.RemoveNotReady = append(p.RemoveNotReady, k)
	}
}
