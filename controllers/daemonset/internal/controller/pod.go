package controller

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// kindDaemonSet is the controllerRef kind of the pods and revisions.
var kindDaemonSet = appsv1alpha1.SchemeGroupVersion.WithKind("DaemonSet")

// maxGeneratedNameLength is the API server's bound on the generateName part
// of a generated name (63 minus 5 random characters).
const maxGeneratedNameLength = 58

// podTemplateGenerationLabel marks pods with the DaemonSet's deprecated
// template generation annotation (upstream's backward compatibility: such a
// pod counts as updated when the generation matches).
const podTemplateGenerationLabel = "pod-template-generation"

// templateGeneration reads the deprecated annotation
// (deprecated.daemonset.template.generation), nil if absent or malformed.
func templateGeneration(ds *appsv1alpha1.DaemonSet) *string {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return nil
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return nil
		}
	}
	return &v
}

// isUpdated reports whether pod runs the update revision: its hash label is
// the revision's hash, or (pods of old DaemonSets) its template generation
// label is the DaemonSet's.
func isUpdated(pod *corev1.Pod, hash string, generation *string) bool {
	if hash != "" && pod.Labels[pub.ControllerRevisionHashLabelKey] == hash {
		return true
	}
	return generation != nil && pod.Labels[podTemplateGenerationLabel] == *generation
}

// newPod builds the daemon pod for node at the revision of hash:
// the template with the daemon tolerations, the revision labels, the
// InPlaceUpdateReady gate for InPlaceIfPossible (the in-place machinery owns
// that condition), the KruisePodReady gate on every pod and a required node
// affinity on the node's name so that kube-scheduler places it (upstream's
// default; a template nodeName is kept).
// The name is generated here rather than by the server so that the
// expectation can name the pod before it exists.
func newPod(ds *appsv1alpha1.DaemonSet, node, hash string) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	labels := make(map[string]string, len(tmpl.Labels)+2)
	maps.Copy(labels, tmpl.Labels)
	labels[pub.ControllerRevisionHashLabelKey] = hash
	if g := templateGeneration(ds); g != nil {
		labels[podTemplateGenerationLabel] = *g
	}
	// Named as the API server would name it from generateName (the prefix
	// cut to 58 characters, then 5 random ones).
	prefix := ds.Name + "-"
	base := prefix
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            base + utilrand.String(5),
			GenerateName:    prefix, // kept as upstream's pods have it (the server uses Name)
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kindDaemonSet)},
		},
		Spec: tmpl.Spec,
	}
	addDaemonTolerations(&pod.Spec)
	if inPlaceIfPossible(ds) {
		podutil.AddReadinessGate(pod, pub.InPlaceUpdateReady)
	}
	// What OpenKruise's pod webhook injects into every pod of its workloads:
	// the gate markPodNotReady turns False so that a PreparingDelete pod
	// leaves its Services. A gate cannot be added to a running pod, so it
	// goes on every pod, not only on those of a DaemonSet that marks pods
	// NotReady today: a hook turned on later must work on the pods already
	// running. refreshPods sets the condition True once the pod is scheduled.
	podutil.AddReadinessGate(pod, pub.KruisePodReadyConditionType)
	if pod.Spec.NodeName == "" {
		pod.Spec.Affinity = nodeplacement.PinToNode(pod.Spec.Affinity, node)
	}
	return pod
}

// rollingUpdate returns the RollingUpdate parameters when the strategy is
// RollingUpdate (nil for OnDelete).
func rollingUpdate(ds *appsv1alpha1.DaemonSet) *appsv1alpha1.RollingUpdateDaemonSet {
	if ds.Spec.UpdateStrategy.Type == appsv1alpha1.OnDeleteDaemonSetStrategyType {
		return nil
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		return ru
	}
	return &appsv1alpha1.RollingUpdateDaemonSet{}
}

func inPlaceIfPossible(ds *appsv1alpha1.DaemonSet) bool {
	ru := rollingUpdate(ds)
	return ru != nil && ru.Type == appsv1alpha1.InplaceRollingUpdateType
}
