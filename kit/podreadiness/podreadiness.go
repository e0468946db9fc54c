package podreadiness

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the readiness gate and pod condition this package
// maintains, KruisePodReady.
const ConditionType = pub.KruisePodReadyConditionType

// Reasons written on the Ready condition by RecomputeReady. They are the
// kubelet's, so the kubelet's own next recomputation does not flip them.
const (
	ReasonContainersNotReady     = "ContainersNotReady"
	ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"
)

// Key is one writer's reason for holding a pod NotReady. Its JSON form,
// {"userAgent":..., "key":...}, is the element of the condition message
// array and is part of the wire contract shared with OpenKruise.
type Key struct {
	// UserAgent names the writer, e.g. "Lifecycle".
	UserAgent string `json:"userAgent"`
	// Key names the reason within that writer, e.g. "preDeleteHook".
	Key string `json:"key"`
}

// String returns "userAgent/key", for logs.
func (k Key) String() string { return k.UserAgent + "/" + k.Key }

// compareKeys orders keys by userAgent, then key (the message order).
func compareKeys(a, b Key) int {
	if c := cmp.Compare(a.UserAgent, b.UserAgent); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// ParseMessage decodes a KruisePodReady condition message into its keys,
// sorted and without duplicates. "" decodes to no keys; anything that is not
// a JSON array of {userAgent, key} objects is an error.
func ParseMessage(msg string) ([]Key, error) {
	if msg == "" {
		return nil, nil
	}
	var keys []Key
	if err := json.Unmarshal([]byte(msg), &keys); err != nil {
		return nil, fmt.Errorf("%s condition message is not a JSON list of keys: %w", ConditionType, err)
	}
	return normalize(keys), nil
}

// FormatMessage encodes keys as the condition message: a JSON array sorted by
// userAgent then key, without duplicates; "[]" when there are none. The input
// slice is not modified.
func FormatMessage(keys []Key) string {
	keys = normalize(slices.Clone(keys))
	if keys == nil {
		keys = []Key{} // "[]", not "null"
	}
	b, err := json.Marshal(keys)
	if err != nil { // cannot happen: two string fields
		panic(err)
	}
	return string(b)
}

// normalize sorts keys in place and drops duplicates.
func normalize(keys []Key) []Key {
	slices.SortFunc(keys, compareKeys)
	return slices.Compact(keys)
}

// HasReadinessGate reports whether the pod declares the KruisePodReady
// readiness gate.
func HasReadinessGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == ConditionType {
			return true
		}
	}
	return false
}

// GetCondition returns the pod's KruisePodReady condition, nil when absent.
// The result points into the pod: treat it as read-only.
func GetCondition(pod *corev1.Pod) *corev1.PodCondition {
	return findCondition(pod.Status.Conditions, ConditionType)
}

// NotReadyKeys returns the keys currently holding the pod NotReady, sorted;
// nil when there is no condition or its message holds no keys (an
// undecodable message counts as none).
func NotReadyKeys(pod *corev1.Pod) []Key {
	c := GetCondition(pod)
	if c == nil {
		return nil
	}
	keys, _ := ParseMessage(c.Message)
	return keys
}

// HasNotReadyKey reports whether key is among NotReadyKeys(pod).
func HasNotReadyKey(pod *corev1.Pod, key Key) bool {
	return slices.Contains(NotReadyKeys(pod), key)
}

// AddNotReadyKey returns the pod's conditions with key added to the
// KruisePodReady message, the condition False (created if missing) and Ready
// recomputed. changed is false, and the conditions are an unchanged copy, when
// the key is already held by a False condition or the pod has no KruisePodReady
// readiness gate. The pod is not modified.
func AddNotReadyKey(pod *corev1.Pod, key Key, now time.Time) (changed bool, conditions []corev1.PodCondition) {
	return Apply(pod, []Key{key}, nil, now)
}

// RemoveNotReadyKey returns the pod's conditions with key removed from the
// KruisePodReady message and Ready recomputed; the condition turns True when
// no key is left. changed is false, and the conditions are an unchanged copy,
// when the key is not held. The pod is not modified.
func RemoveNotReadyKey(pod *corev1.Pod, key Key, now time.Time) (changed bool, conditions []corev1.PodCondition) {
	return Apply(pod, nil, []Key{key}, now)
}

// Apply removes the keys in remove, then adds the keys in add, and returns the
// resulting conditions with Ready recomputed (see AddNotReadyKey and
// RemoveNotReadyKey for the rules of each). One call yields one status write
// however many keys change. The pod is not modified; the returned slice is
// always a fresh copy.
func Apply(pod *corev1.Pod, add, remove []Key, now time.Time) (changed bool, conditions []corev1.PodCondition) {
	conds := slices.Clone(pod.Status.Conditions) // PodCondition holds only values: this is a deep copy
	i := slices.IndexFunc(conds, func(c corev1.PodCondition) bool { return c.Type == ConditionType })
	if !HasReadinessGate(pod) {
		add = nil // the condition would not gate readiness; OpenKruise does not write it either
	}

	var keys []Key
	if i >= 0 {
		keys, _ = ParseMessage(conds[i].Message)
	}
	for _, k := range remove {
		if j := slices.Index(keys, k); j >= 0 {
			keys = slices.Delete(keys, j, j+1)
			changed = true
		}
	}
	for _, k := range add {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
			changed = true
		}
	}
	// A held key must read False even if someone flipped the status.
	if len(add) > 0 && (i < 0 || conds[i].Status != corev1.ConditionFalse) {
		changed = true
	}
	if !changed {
		return false, conds
	}

	status := corev1.ConditionTrue
	if len(keys) > 0 {
		status = corev1.ConditionFalse
	}
	if i < 0 {
		conds = append(conds, corev1.PodCondition{Type: ConditionType})
		i = len(conds) - 1
	}
	c := &conds[i]
	if c.Status != status {
		c.Status = status
		c.LastTransitionTime = metav1.NewTime(now)
	}
	c.Message = FormatMessage(keys)

	_, conds = RecomputeReady(pod, conds, now)
	return true, conds
}

// WithGateConditions returns a copy of pod carrying InitGateConditions' conditions,
// ready to be written over it as a pods/status patch, or nil when no condition
// is missing. The pod is not modified.
func WithGateConditions(pod *corev1.Pod, now time.Time, types ...corev1.PodConditionType) *corev1.Pod {
	changed, conds := InitGateConditions(pod, now, types...)
	if !changed {
		return nil
	}
	next := pod.DeepCopy()
	next.Status.Conditions = conds
	return next
}

// RecomputeReady returns conditions with the Ready condition recomputed the
// way the kubelet computes it, from conditions (the pod's conditions as about
// to be written) and the pod's spec.readinessGates:
//
//   - ContainersReady present and not True: Ready False with ContainersReady's
//     reason (ContainersNotReady if empty) and message;
//   - else any readiness gate whose condition is missing or not True: Ready
//     False, reason ReadinessGatesNotReady, the kubelet's message naming each
//     such gate;
//   - else, if ContainersReady is True: Ready True, no reason or message.
//
// Ready is never added when absent (the kubelet has not reported the pod yet,
// which already means not ready), and without a ContainersReady condition it
// is only ever lowered, never raised: nothing here proves the containers are
// ready. LastTransitionTime is set to now when the status changes. Neither
// the pod nor conditions is modified; the returned slice is a fresh copy and
// changed says whether it differs from conditions.
func RecomputeReady(pod *corev1.Pod, conditions []corev1.PodCondition, now time.Time) (changed bool, out []corev1.PodCondition) {
	out = slices.Clone(conditions)
	ready := findCondition(out, corev1.PodReady)
	if ready == nil {
		return false, out
	}

	var status corev1.ConditionStatus
	var reason, message string
	cr := findCondition(out, corev1.ContainersReady)
	var unready []string
	for _, g := range pod.Spec.ReadinessGates {
		switch c := findCondition(out, g.ConditionType); {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != corev1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	switch {
	case cr != nil && cr.Status != corev1.ConditionTrue:
		status, reason, message = corev1.ConditionFalse, cmp.Or(cr.Reason, ReasonContainersNotReady), cr.Message
	case len(unready) > 0:
		status, reason, message = corev1.ConditionFalse, ReasonReadinessGatesNotReady, strings.Join(unready, ", ")
	case cr != nil:
		status = corev1.ConditionTrue
	default:
		return false, out // no evidence either way: leave Ready as the kubelet wrote it
	}

	if ready.Status == status && ready.Reason == reason && ready.Message == message {
		return false, out
	}
	if ready.Status != status {
		ready.LastTransitionTime = metav1.NewTime(now)
	}
	ready.Status, ready.Reason, ready.Message = status, reason, message
	return true, out
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// MissingGateCondition reports whether pod lists one of types as a readiness
// gate but has no condition for it: the pod InitGateConditions would change.
// It allocates nothing, for event handlers that see every pod update.
func MissingGateCondition(pod *corev1.Pod, types ...corev1.PodConditionType) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if slices.Contains(types, g.ConditionType) && findCondition(pod.Status.Conditions, g.ConditionType) == nil {
			return true
		}
	}
	return false
}

// InitGateConditions returns the pod's conditions with a True condition added
// for each of types that the pod lists as a readiness gate but has no
// condition for, and Ready recomputed (RecomputeReady). A workload that
// injects a gate into the pods it creates owns its condition: until it is
// written the kubelet keeps the pod NotReady. changed is false when nothing
// was missing. The pod is not modified.
func InitGateConditions(pod *corev1.Pod, now time.Time, types ...corev1.PodConditionType) (changed bool, conditions []corev1.PodCondition) {
	conds := slices.Clone(pod.Status.Conditions)
	for _, t := range types {
		gated := slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == t })
		if !gated || findCondition(conds, t) != nil {
			continue
		}
		conds = append(conds, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)})
		changed = true
	}
	if !changed {
		return false, pod.Status.Conditions
	}
	_, conds = RecomputeReady(pod, conds, now)
	return true, conds
}
