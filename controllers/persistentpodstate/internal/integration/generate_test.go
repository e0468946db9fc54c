package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// The StatefulSet annotations OpenKruise defines make the controller create
// a PersistentPodState named after the StatefulSet and controlled by it,
// keep its spec equal to the annotations, and delete it when
// auto-generation is turned off; it then records the pods like any other.
func TestAutoGenerateFromAnnotations(t *testing.T) {
	h := newHarness(t)
	h.nodes("zone-a", "zone-b")
	h.start()
	set := h.statefulSet("gen", 1, map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     zoneKey,
		appsv1alpha1.AnnotationPreferredPersistentTopology:    hostKey,
	})
	pps := h.states.WaitFor("gen", "generated", func(*appsv1alpha1.PersistentPodState) bool { return true })
	require.Len(t, pps.OwnerReferences, 1)
	ref := pps.OwnerReferences[0]
	assert.Equal(t, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "gen", UID: set.UID, Controller: ptr.To(true)}, ref)
	assert.Equal(t, appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.PersistentPodStateTargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "gen"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zoneKey}},
		PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{Weight: 100,
			Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostKey}}}},
	}, pps.Spec)
	h.waitRecords("gen", h.waitReady("gen", "gen-0"))

	h.sets.Modify("gen", func(s *appsv1.StatefulSet) {
		s.Annotations[appsv1alpha1.AnnotationPreferredPersistentTopology] = hostKey + ",rack"
	})
	h.states.WaitFor("gen", "preferred keys follow the annotation", func(p *appsv1alpha1.PersistentPodState) bool {
		return len(p.Spec.PreferredPersistentTopology) == 1 && len(p.Spec.PreferredPersistentTopology[0].Preference.NodeTopologyKeys) == 2
	})

	h.sets.Modify("gen", func(s *appsv1.StatefulSet) {
		delete(s.Annotations, appsv1alpha1.AnnotationAutoGeneratePersistentPodState)
	})
	h.states.WaitGone("gen")
	h.WaitEvent("gen", "PersistentPodStateDeleted")
}

// An Advanced StatefulSet with the seed's annotations (v1.2 §1, unchanged:
// "kubernetes.io/hostname[,other node labels]" is taken as written, split
// at the comma as OpenKruise does) gets its PersistentPodState; deleting
// the StatefulSet deletes it (garbage collector, through the controller
// reference).
func TestAutoGenerateAdvancedStatefulSet(t *testing.T) {
	h := newHarness(t)
	h.start()
	asts := h.advancedStatefulSet("agen", 0, map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationPreferredPersistentTopology:    "kubernetes.io/hostname[,other node labels]",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     "failure-domain.beta.kubernetes.io/zone[,other node labels]",
	})
	pps := h.states.WaitFor("agen", "generated", func(*appsv1alpha1.PersistentPodState) bool { return true })
	assert.Equal(t, "apps.kruise.io/v1beta1", pps.Spec.TargetReference.APIVersion)
	assert.Equal(t, asts.UID, pps.OwnerReferences[0].UID)
	assert.Equal(t, []string{"failure-domain.beta.kubernetes.io/zone[", "other node labels]"}, pps.Spec.RequiredPersistentTopology.NodeTopologyKeys)
	assert.Equal(t, []string{"kubernetes.io/hostname[", "other node labels]"}, pps.Spec.PreferredPersistentTopology[0].Preference.NodeTopologyKeys)

	require.NoError(t, h.Client.AppsV1beta1().StatefulSets(h.NS).Delete(context.Background(), "agen",
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
	h.states.WaitGone("agen")
}

// A PersistentPodState of the StatefulSet's name that the StatefulSet does
// not control is left as it is and reported (OpenKruise would take it over).
func TestAutoGenerateLeavesForeignObject(t *testing.T) {
	h := newHarness(t)
	h.start()
	mine := persistentPodState("mine", "apps/v1", "mine", 10)
	h.states.Create(mine)
	h.statefulSet("mine", 0, map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     "rack",
	})
	ev := h.WaitEvent("mine", "PersistentPodStateNotGenerated")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, []string{zoneKey}, h.states.Get("mine").Spec.RequiredPersistentTopology.NodeTopologyKeys, "left as it was")
}

// Pods of an Advanced StatefulSet (created here by hand with its
// controller reference and pod-name label, as its controller creates them)
// are recorded, and one recreated under its name gets its topology: the
// apps.kruise.io/v1alpha1 targetRef names the same StatefulSet.
func TestAdvancedStatefulSetPods(t *testing.T) {
	h := newHarness(t)
	h.nodes("zone-a", "zone-b")
	h.start()
	asts := h.advancedStatefulSet("kv", 2, nil)
	h.states.Create(persistentPodState("kv", "apps.kruise.io/v1alpha1", "kv", 100))
	for _, n := range podNames("kv", 2) {
		h.advancedPod(asts, n)
	}
	pods := h.waitReady("kv", podNames("kv", 2)...)
	pps := h.waitRecords("kv", pods)
	waitScopeNames(t, h, "kv-0", "kv-1")

	h.deletePod("kv-1")
	h.PodObjects().WaitGone("kv-1")
	h.advancedPod(asts, "kv-1")
	pod := h.recreated("kv-1", pods[1].UID, true)
	assert.Equal(t, pps.Status.PodStates["kv-1"].NodeTopologyLabels[zoneKey], pod.Spec.NodeSelector[zoneKey])
	assert.Equal(t, "kv", pod.Annotations[appsv1alpha1.AnnotationInjectedPersistentPodState])
}

// advancedStatefulSet creates an Advanced StatefulSet (no controller runs
// it here).
func (h *harness) advancedStatefulSet(name string, replicas int32, annotations map[string]string) *appsv1beta1.StatefulSet {
	h.T.Helper()
	s, err := h.Client.AppsV1beta1().StatefulSets(h.NS).Create(context.Background(), &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: lab.Selector(name), ServiceName: name,
			Template: lab.Template(name, image)},
	}, metav1.CreateOptions{})
	require.NoError(h.T, err)
	return s
}

// advancedPod creates pod name of s as its controller would.
func (h *harness) advancedPod(s *appsv1beta1.StatefulSet, name string) {
	h.T.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": s.Name, "statefulset.kubernetes.io/pod-name": name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: s.Name, UID: s.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}, TerminationGracePeriodSeconds: ptr.To(int64(0)),
			NodeSelector: map[string]string{testenv.TestNodeLabel: h.NS}, Tolerations: []corev1.Toleration{testenv.TestNodeToleration()}},
	}
	_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(h.T, err)
}
