package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/persistentpodstate/internal/topology"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// workload is what the reconciler reads of the target StatefulSet, of
// either kind.
type workload struct {
	meta       *metav1.ObjectMeta
	apiVersion string
	replicas   int32
	// reserved are an Advanced StatefulSet's spec.reserveOrdinals.
	reserved []intstr.IntOrString
}

func (w *workload) deleting() bool { return w.meta.DeletionTimestamp != nil }

// recordInput is what calculateRecords decides from.
type recordInput struct {
	ppsName string
	spec    *appsv1alpha1.PersistentPodStateSpec
	old     map[string]appsv1alpha1.PodState
	// pods are the pods the target StatefulSet controls (cache objects).
	pods []*corev1.Pod
	// nodeLabels returns a node's labels, false when the cache lacks it.
	nodeLabels func(name string) (map[string]string, bool)
	// target is nil when the StatefulSet does not exist.
	target *workload
}

// missedPod is a pod created without the constraints its record gave: it
// runs on another node than recorded and carries no injected annotation
// (the pod webhook was not called, failurePolicy Ignore, or failed).
type missedPod struct {
	Pod, RecordedNode, Node string
}

// records is calculateRecords' decision.
type records struct {
	states map[string]appsv1alpha1.PodState
	missed []missedPod
	// injected: a ready pod carries this PersistentPodState's injected
	// annotation (the webhook served it).
	injected bool
}

// calculateRecords computes the new status.podStates as OpenKruise does: no
// records when the StatefulSet is gone or being deleted; else, for each
// ready pod scheduled on a node the cache knows, its node name, the node's
// values of the topology keys and the pod's values of the annotation keys —
// kept as recorded when the node and both key sets are unchanged; with
// retention WhenScaled, the record of a pod whose ordinal is beyond the
// StatefulSet's replicas (reserved ordinals skipped) and which no longer
// exists is dropped.
func calculateRecords(in recordInput) records {
	if in.target == nil || in.target.deleting() {
		return records{}
	}
	out := records{states: maps.Clone(in.old)}
	if out.states == nil {
		out.states = map[string]appsv1alpha1.PodState{}
	}
	keys, annKeys := topology.Keys(in.spec), topology.AnnotationKeys(in.spec)
	live := make(map[string]bool, len(in.pods))
	for _, pod := range in.pods {
		live[pod.Name] = true
		if !podutil.IsReady(pod) || pod.Spec.NodeName == "" {
			continue
		}
		injectedBy := pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState]
		out.injected = out.injected || injectedBy == in.ppsName
		old, had := out.states[pod.Name]
		if had && old.NodeName == pod.Spec.NodeName && slices.Equal(sortedKeys(old.NodeTopologyLabels), keys) &&
			slices.Equal(sortedKeys(old.Annotations), annKeys) {
			continue
		}
		if had && old.NodeName != pod.Spec.NodeName && injectedBy == "" && !topology.ConstraintsFor(in.spec, old).Empty() {
			out.missed = append(out.missed, missedPod{Pod: pod.Name, RecordedNode: old.NodeName, Node: pod.Spec.NodeName})
		}
		labels, ok := in.nodeLabels(pod.Spec.NodeName)
		if !ok {
			continue
		}
		out.states[pod.Name] = stateOf(pod, labels, keys, annKeys)
	}
	if in.spec.PersistentPodStateRetentionPolicy != appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted {
		for name := range out.states {
			ordinal, ok := ordinalOf(name)
			if ok && !inReplicas(ordinal, in.target.replicas, in.target.reserved) && !live[name] {
				delete(out.states, name)
			}
		}
	}
	return out
}

// stateOf is the record of pod on a node labelled labels.
func stateOf(pod *corev1.Pod, labels map[string]string, keys, annKeys []string) appsv1alpha1.PodState {
	s := appsv1alpha1.PodState{NodeName: pod.Spec.NodeName, NodeTopologyLabels: map[string]string{}, Annotations: map[string]string{}}
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			s.NodeTopologyLabels[k] = v
		}
	}
	for _, k := range annKeys {
		if v, ok := pod.Annotations[k]; ok {
			s.Annotations[k] = v
		}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// ordinalOf parses the ordinal after a pod name's last "-".
func ordinalOf(name string) (int, bool) {
	i := strings.LastIndex(name, "-")
	n, err := strconv.Atoi(name[i+1:])
	return n, err == nil && n >= 0
}

// inReplicas reports whether ordinal is one of the StatefulSet's replicas:
// the first replicas ordinals that are not reserved.
func inReplicas(ordinal int, replicas int32, reserved []intstr.IntOrString) bool {
	if isReserved(ordinal, reserved) {
		return false
	}
	below := 0 // reserved ordinals below ordinal
	for i := 0; i < ordinal; i++ {
		if isReserved(i, reserved) {
			below++
		}
	}
	return ordinal-below < int(replicas)
}

// isReserved reports whether reserveOrdinals (ints, or "a-b" ranges as
// Advanced StatefulSet takes them) holds ordinal; malformed entries hold
// nothing.
func isReserved(ordinal int, reserved []intstr.IntOrString) bool {
	for _, r := range reserved {
		if r.Type == intstr.Int {
			if int(r.IntVal) == ordinal {
				return true
			}
			continue
		}
		lo, hi, ok := strings.Cut(r.StrVal, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 == nil && err2 == nil && a <= ordinal && ordinal <= b {
			return true
		}
	}
	return false
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
