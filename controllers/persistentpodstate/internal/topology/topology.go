// Package topology holds what the reconciler and the pod webhook both decide
// about a PersistentPodState: which StatefulSet a pod or a PersistentPodState
// names (Target), the node label keys a PersistentPodState records, and the
// scheduling constraints a recorded state gives a recreated pod
// (Constraints). Pure functions only.
package topology

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Groups of the StatefulSets a PersistentPodState can target: apps/v1 and
// Advanced StatefulSet (apps.kruise.io, v1beta1 or v1alpha1).
const (
	GroupApps       = "apps"
	GroupKruise     = "apps.kruise.io"
	KindStatefulSet = "StatefulSet"
)

// Target identifies a StatefulSet in a namespace by API group and name. As
// OpenKruise compares references, the version is left out: a
// PersistentPodState naming apps.kruise.io/v1alpha1 targets the Advanced
// StatefulSet served at v1beta1.
type Target struct {
	Namespace, Group, Name string
}

// String is the index key of the target.
func (t Target) String() string { return t.Namespace + "/" + t.Group + "/" + t.Name }

// supported reports whether group/kind is a StatefulSet kind.
func supported(group, kind string) bool {
	return kind == KindStatefulSet && (group == GroupApps || group == GroupKruise)
}

// OfPersistentPodState returns the StatefulSet pps targets, false for an
// unsupported kind (the CRD's rules reject those; one stored before them
// targets nothing).
func OfPersistentPodState(pps *appsv1alpha1.PersistentPodState) (Target, bool) {
	ref := pps.Spec.TargetReference
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !supported(gv.Group, ref.Kind) || ref.Name == "" {
		return Target{}, false
	}
	return Target{Namespace: pps.Namespace, Group: gv.Group, Name: ref.Name}, true
}

// OfPod returns the StatefulSet controlling pod (its controllerRef), false
// when a StatefulSet of neither kind controls it.
func OfPod(pod metav1.Object) (Target, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return Target{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !supported(gv.Group, ref.Kind) {
		return Target{}, false
	}
	return Target{Namespace: pod.GetNamespace(), Group: gv.Group, Name: ref.Name}, true
}

// Keys returns the node label keys spec records: those of the required
// term and of every preferred term, sorted, without duplicates.
func Keys(spec *appsv1alpha1.PersistentPodStateSpec) []string {
	var keys []string
	if spec.RequiredPersistentTopology != nil {
		keys = append(keys, spec.RequiredPersistentTopology.NodeTopologyKeys...)
	}
	for _, t := range spec.PreferredPersistentTopology {
		keys = append(keys, t.Preference.NodeTopologyKeys...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// AnnotationKeys returns the pod annotation keys spec records, sorted,
// without duplicates.
func AnnotationKeys(spec *appsv1alpha1.PersistentPodStateSpec) []string {
	keys := make([]string, 0, len(spec.PersistentPodAnnotations))
	for _, a := range spec.PersistentPodAnnotations {
		keys = append(keys, a.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Constraints are what a recorded state gives a recreated pod, as
// OpenKruise's webhook writes them: the required term as nodeSelector
// entries (a key the record lacks is left out), each preferred term as a
// preferred scheduling term of its weight matching the recorded values
// (In, one value per key; a term with no recorded key stays, empty, as
// OpenKruise keeps it: an empty preference matches every node).
type Constraints struct {
	NodeSelector map[string]string
	Preferred    []corev1.PreferredSchedulingTerm
}

// Empty reports whether c constrains nothing.
func (c Constraints) Empty() bool { return len(c.NodeSelector) == 0 && len(c.Preferred) == 0 }

// ConstraintsFor returns the constraints spec and the recorded state give.
func ConstraintsFor(spec *appsv1alpha1.PersistentPodStateSpec, state appsv1alpha1.PodState) Constraints {
	var c Constraints
	if spec.RequiredPersistentTopology != nil {
		for _, k := range spec.RequiredPersistentTopology.NodeTopologyKeys {
			if v, ok := state.NodeTopologyLabels[k]; ok {
				if c.NodeSelector == nil {
					c.NodeSelector = map[string]string{}
				}
				c.NodeSelector[k] = v
			}
		}
	}
	for _, t := range spec.PreferredPersistentTopology {
		term := corev1.PreferredSchedulingTerm{Weight: t.Weight}
		for _, k := range t.Preference.NodeTopologyKeys {
			if v, ok := state.NodeTopologyLabels[k]; ok {
				term.Preference.MatchExpressions = append(term.Preference.MatchExpressions,
					corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
			}
		}
		c.Preferred = append(c.Preferred, term)
	}
	return c
}

// Apply writes c into pod (nodeSelector entries over the pod's own, the
// preferred terms after the pod's own) and marks it with the injected
// annotation naming the PersistentPodState. A preferred term the pod
// already carries is not added again: a second injection (a reinvocation,
// or OpenKruise's webhook still installed during a migration) leaves the
// pod as one would.
func Apply(pod *corev1.Pod, ppsName string, c Constraints) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState] = ppsName
	for k, v := range c.NodeSelector {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	if len(c.Preferred) == 0 {
		return
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	for _, term := range c.Preferred {
		if !slices.ContainsFunc(na.PreferredDuringSchedulingIgnoredDuringExecution, func(t corev1.PreferredSchedulingTerm) bool {
			return equality.Semantic.DeepEqual(t, term)
		}) {
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, term)
		}
	}
}

// TargetIndex indexes PersistentPodStates and pods by Target: a
// PersistentPodState under the StatefulSet it targets, a pod under the
// StatefulSet controlling it.
const TargetIndex = "statefulSetTarget"

// AddStateIndex indexes PersistentPodStates by target (the webhook's cache
// too), unless the informer has the index already.
func AddStateIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[TargetIndex]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{TargetIndex: indexStateByTarget}); err != nil {
		return fmt.Errorf("persistentpodstate: index: %w", err)
	}
	return nil
}

func indexStateByTarget(obj any) ([]string, error) {
	pps, ok := obj.(*appsv1alpha1.PersistentPodState)
	if !ok {
		return nil, nil
	}
	if t, ok := OfPersistentPodState(pps); ok {
		return []string{t.String()}, nil
	}
	return nil, nil
}

// StateFor returns the PersistentPodState targeting t from an indexer with
// TargetIndex: the first by name that is not being deleted (OpenKruise takes
// the first of its list), nil if none.
func StateFor(ix cache.Indexer, t Target) (*appsv1alpha1.PersistentPodState, error) {
	objs, err := ix.ByIndex(TargetIndex, t.String())
	if err != nil {
		return nil, fmt.Errorf("persistentpodstates of %s: %w", t, err)
	}
	var found *appsv1alpha1.PersistentPodState
	for _, o := range objs {
		pps, ok := o.(*appsv1alpha1.PersistentPodState)
		if !ok || pps.DeletionTimestamp != nil {
			continue
		}
		if found == nil || pps.Name < found.Name {
			found = pps
		}
	}
	return found, nil
}
