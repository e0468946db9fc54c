package spread

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Operation is what the webhook admits.
type Operation string

// Operations, as OpenKruise names them.
const (
	Create   Operation = "Create"
	Delete   Operation = "Delete"
	Eviction Operation = "Eviction"
)

// InitialStatuses are the subset statuses of a WorkloadSpread whose status
// has none yet (the webhook runs before the reconciler's first write):
// every subset empty, missingReplicas its limit for replicas.
func InitialStatuses(ws *appsv1alpha1.WorkloadSpread, replicas int32) ([]appsv1alpha1.WorkloadSpreadSubsetStatus, error) {
	out := make([]appsv1alpha1.WorkloadSpreadSubsetStatus, 0, len(ws.Spec.Subsets))
	for i := range ws.Spec.Subsets {
		max, err := MaxReplicas(&ws.Spec.Subsets[i], replicas)
		if err != nil {
			return nil, fmt.Errorf("subset %s maxReplicas: %w", ws.Spec.Subsets[i].Name, err)
		}
		out = append(out, appsv1alpha1.WorkloadSpreadSubsetStatus{Name: ws.Spec.Subsets[i].Name, MissingReplicas: max})
	}
	return out, nil
}

// Admission is the outcome of Admit.
type Admission struct {
	// Subset is the pod's subset ("" when none has room: the pod is
	// created unchanged).
	Subset string
	// Changed: statuses were modified and must be written before the pod
	// is admitted.
	Changed bool
	// UID is the creatingPods key generated for a pod without a name.
	UID string
}

// Admit records op of pod in statuses (modified in place, a copy the
// caller owns), as OpenKruise's webhook does: a Create takes the first
// schedulable subset with room (missingReplicas > 0, or -1: unlimited),
// records the pod in its creatingPods (by name, or by newUID() when the
// pod has no name yet) and lowers missingReplicas; a Delete or Eviction of
// a pod of subset records it in deletingPods and raises missingReplicas. A
// pod already recorded in creatingPods or deletingPods changes nothing (a
// retried request), nor does an unlimited subset.
func Admit(statuses []appsv1alpha1.WorkloadSpreadSubsetStatus, op Operation, podName, subset string, now time.Time, newUID func() string) Admission {
	if rec := recordedIn(statuses, podName); podName != "" && rec != "" {
		return Admission{Subset: rec}
	}
	var st *appsv1alpha1.WorkloadSpreadSubsetStatus
	switch op {
	case Create:
		st = firstWithRoom(statuses)
	case Delete, Eviction:
		st = byName(statuses, subset)
	}
	if st == nil {
		return Admission{}
	}
	if st.MissingReplicas == -1 {
		return Admission{Subset: st.Name}
	}
	t := metav1.NewTime(now)
	switch op {
	case Create:
		key, uid := podName, ""
		if key == "" {
			uid = newUID()
			key = uid
		}
		if st.CreatingPods == nil {
			st.CreatingPods = map[string]metav1.Time{}
		}
		st.CreatingPods[key] = t
		if st.MissingReplicas > 0 {
			st.MissingReplicas--
		}
		return Admission{Subset: st.Name, Changed: true, UID: uid}
	default:
		if st.DeletingPods == nil {
			st.DeletingPods = map[string]metav1.Time{}
		}
		st.DeletingPods[podName] = t
		st.MissingReplicas++
		return Admission{Subset: st.Name, Changed: true}
	}
}

func recordedIn(statuses []appsv1alpha1.WorkloadSpreadSubsetStatus, name string) string {
	for i := range statuses {
		if _, ok := statuses[i].CreatingPods[name]; ok {
			return statuses[i].Name
		}
		if _, ok := statuses[i].DeletingPods[name]; ok {
			return statuses[i].Name
		}
	}
	return ""
}

func firstWithRoom(statuses []appsv1alpha1.WorkloadSpreadSubsetStatus) *appsv1alpha1.WorkloadSpreadSubsetStatus {
	for i := range statuses {
		s := &statuses[i]
		if Schedulable(s) && (s.MissingReplicas > 0 || s.MissingReplicas == -1) {
			return s
		}
	}
	return nil
}

func byName(statuses []appsv1alpha1.WorkloadSpreadSubsetStatus, name string) *appsv1alpha1.WorkloadSpreadSubsetStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// OrdinalSubset is the subset of a StatefulSet pod, by its ordinal, as
// OpenKruise decides it (no status write): subsets in order, each taking
// maxReplicas ordinals, unschedulable ones skipped.
func OrdinalSubset(ws *appsv1alpha1.WorkloadSpread, podName string) string {
	ord := ordinal(podName)
	if ord < 0 {
		return ""
	}
	threshold := int64(0)
	for i := range ws.Spec.Subsets {
		s := &ws.Spec.Subsets[i]
		if !Schedulable(statusOf(ws, s.Name)) {
			continue
		}
		limit := int64(1<<31 - 1)
		if s.MaxReplicas != nil {
			limit = int64(s.MaxReplicas.IntValue())
		}
		threshold += limit
		if int64(ord) < threshold {
			return s.Name
		}
	}
	return ""
}

func statusOf(ws *appsv1alpha1.WorkloadSpread, name string) *appsv1alpha1.WorkloadSpreadSubsetStatus {
	return byName(ws.Status.SubsetStatuses, name)
}

// ordinal is the trailing -<n> of a StatefulSet pod's name, -1 if none.
func ordinal(name string) int {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i == 0 || name[i-1] != '-' {
		return -1
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil {
		return -1
	}
	return n
}

// Inject changes pod for subset of ws as OpenKruise does: tolerations
// appended; preferred terms appended; the required term ANDed into each
// existing required term (or made the only one); the subset's patch merged
// strategically (a changed priorityClassName clears priority); the
// annotation written.
func Inject(pod *corev1.Pod, ws *appsv1alpha1.WorkloadSpread, subset, uid string) error {
	var s *appsv1alpha1.WorkloadSpreadSubset
	for i := range ws.Spec.Subsets {
		if ws.Spec.Subsets[i].Name == subset {
			s = &ws.Spec.Subsets[i]
		}
	}
	if s == nil {
		return fmt.Errorf("workloadspread %s has no subset %q", ws.Name, subset)
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, s.Tolerations...)
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, s.PreferredNodeSelectorTerms...)
	if r := s.RequiredNodeSelectorTerm; r != nil {
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
		}
		terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{*r.DeepCopy()}
		}
		for i := range terms {
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, r.MatchExpressions...)
			terms[i].MatchFields = append(terms[i].MatchFields, r.MatchFields...)
		}
	}
	if len(s.Patch.Raw) > 0 {
		if err := applyPatch(pod, s.Patch.Raw); err != nil {
			return fmt.Errorf("subset %s patch: %w", subset, err)
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationKey] = Injected{Name: ws.Name, Subset: subset, UID: uid}.Encode()
	return nil
}

// applyPatch merges a strategic merge patch into pod.
func applyPatch(pod *corev1.Pod, patch []byte) error {
	orig, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, &corev1.Pod{})
	if err != nil {
		return err
	}
	var out corev1.Pod
	if err := json.Unmarshal(merged, &out); err != nil {
		return err
	}
	if out.Spec.PriorityClassName != pod.Spec.PriorityClassName {
		out.Spec.Priority = nil
	}
	*pod = out
	return nil
}
