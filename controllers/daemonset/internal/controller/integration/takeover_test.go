package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// The fixtures below are what OpenKruise v1.9.0's Advanced DaemonSet
// controller (pkg/controller/daemonset) leaves behind, written from reading
// its source; each names the function it mirrors.

// okComputeHash mirrors Kubernetes' controller.ComputeHash, which
// daemonset_history.go snapshot names revisions with: FNV-1a 32 of the
// spew-like dump (DeepHashObject) of the pod template, then the collision
// count (when not nil) as 8 little-endian bytes, printed in decimal and
// safe-encoded. Over this module's PodTemplateSpec (Kubernetes 1.37 types)
// the value differs from what OpenKruise's binary (1.32 types, other fields)
// computes for the same template — it is an opaque hash either way, not
// derived from the revision data, which is why Flotilla must recognise an
// OpenKruise revision by its content and keep its name and hash.
func okComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		b[0], b[1], b[2], b[3] = byte(*collisionCount), byte(*collisionCount>>8), byte(*collisionCount>>16), byte(*collisionCount>>24)
		_, _ = h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// okDaemonSetPatch mirrors daemonset_history.go getPatch: the whole
// DaemonSet encoded (Kubernetes 1.32's ObjectMeta writes the template's zero
// creationTimestamp as null; 1.37's omits it, so the fixture adds it),
// decoded into map[string]interface{}, spec.template kept with
// "$patch":"replace", encoded again (keys sorted at every level).
func okDaemonSetPatch(t *testing.T, ds *appsv1alpha1.DaemonSet) []byte {
	t.Helper()
	raw, err := json.Marshal(ds)
	require.NoError(t, err)
	var m map[string]interface{}
	require.NoError(t, json.Unmarshal(raw, &m))
	template := m["spec"].(map[string]interface{})["template"].(map[string]interface{})
	meta, _ := template["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		template["metadata"] = meta
	}
	if _, ok := meta["creationTimestamp"]; !ok {
		meta["creationTimestamp"] = nil
	}
	template["$patch"] = "replace"
	out, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": template}})
	require.NoError(t, err)
	return out
}

// okControllerRef is the controllerRef OpenKruise v1.9 writes (controllerKind
// is apps.kruise.io/v1beta1 DaemonSet: it reconciles v1beta1 objects).
func okControllerRef(ds *appsv1alpha1.DaemonSet) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// okDaemonPod mirrors syncNodes: Kubernetes' CreatePodTemplate (template
// labels plus controller-revision-hash; AddOrUpdateDaemonPodTolerations
// appends the node-problem tolerations) and
// ReplaceDaemonSetPodNodeNameNodeAffinity (required affinity on the node's
// metadata.name), created with generateName <ds>- and the controllerRef.
func okDaemonPod(ds *appsv1alpha1.DaemonSet, node, hash string) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	lbls := map[string]string{}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	lbls[pub.ControllerRevisionHashLabelKey] = hash
	spec := tmpl.Spec
	for _, tol := range []struct {
		key    string
		effect corev1.TaintEffect
	}{
		{corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute},
		{corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute},
		{corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule},
		{corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule},
		{corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule},
		{corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule},
	} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: tol.key, Operator: corev1.TolerationOpExists, Effect: tol.effect})
	}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ds.Name + "-", Namespace: ds.Namespace, Labels: lbls, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{okControllerRef(ds)},
		},
		Spec: spec,
	}
}

// TestTakeoverFromOpenKruise (issue 23): an Advanced DaemonSet converged by
// OpenKruise v1.9 — its stored spec (SetDefaultsDaemonSetV1beta1), its
// ControllerRevision (snapshot: named by ComputeHash, data from getPatch),
// a pod per node labelled with that hash, its status — then Flotilla's
// controller starts. No pod is deleted, recreated, restarted or written;
// OpenKruise's revision is reused (no twin), its hash stays the pods' label
// and status.daemonSetHash; a node added afterwards gets a pod with that
// hash.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	kube, ctx := h.Env.Kube, context.Background()

	ds := h.newDS("okds", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}
		// SetDefaultsDaemonSetV1beta1.
		ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(250))
		ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{
			Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
				Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
			},
		}
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	})
	ds = h.sets.Create(ds)
	rev, hash := h.okSnapshot(ds, 1)
	for _, n := range nodes {
		_, err := kube.CoreV1().Pods(h.NS).Create(ctx, okDaemonPod(ds, n, hash), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	placed := h.waitPlaced("okds", nodes, hash)
	// storeDaemonSetStatus, as OpenKruise last wrote it (v1beta1
	// updateRevision is v1alpha1 daemonSetHash).
	okStatus := appsv1alpha1.DaemonSetStatus{
		ObservedGeneration: ds.Generation, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2,
		UpdatedNumberScheduled: 2, NumberAvailable: 2, DaemonSetHash: hash,
	}
	h.sets.ModifyStatus("okds", func(d *appsv1alpha1.DaemonSet) { d.Status = okStatus })
	writes := testenv.WatchPodWrites(t, kube, h.NS)
	var okPods []string
	for _, p := range placed {
		okPods = append(okPods, p.Name)
	}

	h.start()
	// A node joins: the controller has synced once it placed a pod there,
	// at OpenKruise's revision.
	third := h.nodes(1, nil)
	all := append(append([]string{}, nodes...), third...)
	h.waitPlaced("okds", all, hash)
	got := h.waitStatus("okds", "three pods", settled(3)).Status
	assert.Equal(t, hash, got.DaemonSetHash, "OpenKruise's hash is kept")
	assert.Nil(t, got.CollisionCount)

	revs := h.history("okds")
	require.Len(t, revs, 1, "OpenKruise's revision reused, no twin")
	assert.Equal(t, rev.UID, revs[0].UID)
	assert.Equal(t, int64(1), revs[0].Revision)

	testenv.Consistently(t, 3*time.Second, func() error { return writes.Untouched(1, okPods...) })
	now := h.waitPlaced("okds", all, hash)
	for n, p := range placed {
		assert.Equal(t, p.UID, now[n].UID, "pod on %s kept", n)
	}
}

// okSnapshot creates the revision daemonset_history.go snapshot writes for
// ds's current template (ComputeHash name, getPatch data) numbered number,
// and returns it with its hash.
func (h *harness) okSnapshot(ds *appsv1alpha1.DaemonSet, number int64) (*appsv1.ControllerRevision, string) {
	h.T.Helper()
	hash := okComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[pub.ControllerRevisionHashLabelKey] = hash
	rev, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Create(context.Background(), &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + hash, Namespace: h.NS, Labels: lbls, Annotations: ds.Annotations,
			OwnerReferences: []metav1.OwnerReference{okControllerRef(ds)},
		},
		Data:     runtime.RawExtension{Raw: okDaemonSetPatch(h.T, ds)},
		Revision: number,
	}, metav1.CreateOptions{})
	require.NoError(h.T, err)
	return rev, hash
}

// TestTakeoverFromOpenKruiseMidRollout (issue 23): OpenKruise stopped in
// the middle of a rolling update held by partition 1 — two revisions, the
// higher-named node's pod recreated at the new one (OpenKruise's node order:
// names in reverse), the other still at the old one, status counting one
// updated pod. Flotilla takes over where OpenKruise stopped: both revisions
// reused (the update revision is OpenKruise's newest), no pod written, the
// partition still holds the old pod; lowering it to 0 rolls that pod to
// OpenKruise's update hash.
func TestTakeoverFromOpenKruiseMidRollout(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	kube, ctx := h.Env.Kube, context.Background()
	ds := h.sets.Create(h.newDS("okroll", func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(250))
		ds.Spec.UpdateStrategy = appsv1alpha1.DaemonSetUpdateStrategy{
			Type: appsv1alpha1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
				Type: appsv1alpha1.StandardRollingUpdateType, MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
				Partition: ptr.To(intstr.FromInt32(1)),
			},
		}
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}))
	old, oldHash := h.okSnapshot(ds, 1)
	oldPod := okDaemonPod(ds, nodes[0], oldHash)
	ds = h.sets.Modify("okroll", setImage(imageV2))
	upd, updHash := h.okSnapshot(ds, 2)
	require.NotEqual(t, oldHash, updHash)
	for _, p := range []*corev1.Pod{oldPod, okDaemonPod(ds, nodes[1], updHash)} {
		_, err := kube.CoreV1().Pods(h.NS).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		by := h.byNode("okroll")
		return len(by[nodes[0]]) == 1 && len(by[nodes[1]]) == 1 && testenv.PodReady(&by[nodes[0]][0]) && testenv.PodReady(&by[nodes[1]][0]), nil
	})
	okStatus := appsv1alpha1.DaemonSetStatus{
		ObservedGeneration: ds.Generation, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2,
		UpdatedNumberScheduled: 1, NumberAvailable: 2, DaemonSetHash: updHash,
	}
	h.sets.ModifyStatus("okroll", func(d *appsv1alpha1.DaemonSet) { d.Status = okStatus })
	before := h.byNode("okroll")
	writes := testenv.WatchPodWrites(t, kube, h.NS)

	h.start()
	// The controller has synced once a new node holds a pod (at the update hash).
	third := h.nodes(1, nil)
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		ps := h.byNode("okroll")[third[0]]
		return len(ps) == 1 && ps[0].Labels[pub.ControllerRevisionHashLabelKey] == updHash, nil
	})
	h.waitStatus("okroll", "three scheduled, two updated", func(s appsv1alpha1.DaemonSetStatus) bool {
		return s.DesiredNumberScheduled == 3 && s.UpdatedNumberScheduled == 2 && s.DaemonSetHash == updHash
	})
	var okPods []string
	for _, n := range nodes {
		okPods = append(okPods, before[n][0].Name)
	}
	testenv.Consistently(t, 3*time.Second, func() error { return writes.Untouched(1, okPods...) })
	revs := h.history("okroll")
	require.Len(t, revs, 2, "OpenKruise's two revisions reused, no twin")
	assert.Equal(t, []string{old.Name, upd.Name}, []string{revs[0].Name, revs[1].Name})

	// What OpenKruise would do next: partition 0 rolls the old pod to its update hash.
	h.sets.Modify("okroll", func(d *appsv1alpha1.DaemonSet) {
		d.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(0))
	})
	h.waitPlaced("okroll", append(append([]string{}, nodes...), third...), updHash)
	assert.Len(t, h.history("okroll"), 2)
}
