package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/davecgh/go-spew/spew"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Fixtures: a CloneSet exactly as OpenKruise v1.9.0's kruise-manager leaves
// it, written from reading its source (never from Flotilla's code, so the
// takeover test compares Flotilla with OpenKruise, not with itself).

// okRevisionData mirrors OpenKruise v1.9
// pkg/controller/cloneset/revision/cloneset_revision.go realControl.getPatch:
// the whole CloneSet is encoded with encoding/json (the v1alpha1 codec),
// decoded into map[string]interface{}, spec.template kept under a fresh
// "spec", "$patch":"replace" added to it (clonesetcore SetRevisionTemplate)
// and the map encoded again. OpenKruise v1.9 is built with Kubernetes 1.32
// types, whose metav1.ObjectMeta writes a zero creationTimestamp as null;
// this test is built with newer types that omit it, so the null is put back
// here, as that encoder wrote it.
//
// flotillaBefore leaves the null out: the bytes Flotilla's TemplatePatch
// wrote before it matched OpenKruise (what clusters already running Flotilla
// hold).
func okRevisionData(t *testing.T, cs *appsv1alpha1.CloneSet, flotillaBefore bool) []byte {
	t.Helper()
	whole, err := json.Marshal(cs)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(whole, &raw))
	tmpl := raw["spec"].(map[string]any)["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		tmpl["metadata"] = meta
	}
	if _, ok := meta["creationTimestamp"]; !ok && !flotillaBefore {
		meta["creationTimestamp"] = nil
	}
	tmpl["$patch"] = "replace"
	out, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	require.NoError(t, err)
	return out
}

// okHash mirrors k8s.io/kubernetes 1.32 pkg/controller/history
// HashControllerRevision: FNV-1 32 (hash/fnv.New32) of the raw data, then the
// decimal collision count, printed in decimal through rand.SafeEncodeString.
func okHash(data []byte, collisionCount int32) string {
	h := fnv.New32()
	_, _ = h.Write(data)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// okVCTHash mirrors OpenKruise v1.9 pkg/util/volumeclaimtemplate
// PatchVCTemplateHash / getExpectHash: "" without templates; otherwise the
// templates reduced to {name, spec}, sorted by name, encoded with
// encoding/json (Kubernetes 1.32 types: "creationTimestamp":null in metadata
// and an empty "status":{}), and that byte slice hashed with FNV-1a 32
// through k8s.io/kubernetes pkg/util/hash DeepHashObject (spew %#v, sorted
// keys, methods disabled).
func okVCTHash(t *testing.T, vcts []corev1.PersistentVolumeClaim) string {
	t.Helper()
	if len(vcts) == 0 {
		return ""
	}
	type meta struct {
		Name              string `json:"name,omitempty"`
		CreationTimestamp *int   `json:"creationTimestamp"` // always null
	}
	type pvc struct {
		Metadata meta                               `json:"metadata"`
		Spec     corev1.PersistentVolumeClaimSpec   `json:"spec"`
		Status   corev1.PersistentVolumeClaimStatus `json:"status"`
	}
	var list []pvc
	for _, v := range vcts {
		list = append(list, pvc{Metadata: meta{Name: v.Name}, Spec: v.Spec})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Metadata.Name < list[j].Metadata.Name })
	b, err := json.Marshal(list)
	require.NoError(t, err)
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", b)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// okRevision mirrors OpenKruise v1.9 realControl.NewRevision:
// history.NewControllerRevision (name <cs>-<hash>, labels = template labels +
// controller.kubernetes.io/hash, controllerRef to the CloneSet), every
// CloneSet annotation copied, PatchVCTemplateHash.
func okRevision(t *testing.T, cs *appsv1alpha1.CloneSet, number int64, flotillaBefore bool) *appsv1.ControllerRevision {
	t.Helper()
	data := okRevisionData(t, cs, flotillaBefore)
	hash := okHash(data, ptr.Deref(cs.Status.CollisionCount, 0))
	labels := maps.Clone(cs.Spec.Template.Labels)
	labels["controller.kubernetes.io/hash"] = hash
	annotations := maps.Clone(cs.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[pub.CloneSetVolumeClaimTemplateHashKey] = okVCTHash(t, cs.Spec.VolumeClaimTemplates)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs.Name + "-" + hash, Namespace: cs.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{okControllerRef(cs)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

func okControllerRef(cs *appsv1alpha1.CloneSet) metav1.OwnerReference {
	return *metav1.NewControllerRef(cs, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
}

// okPod mirrors what OpenKruise v1.9 leaves on a CloneSet pod once it is
// Normal: pkg/controller/cloneset/utils NewPodsFromRevisions / core
// newVersionedPods (name <cs>-<id>, generateName <cs>-, template labels and
// annotations, controller-revision-hash = revision name, pod-template-hash =
// short hash, apps.kruise.io/cloneset-instance-id, readiness gate
// InPlaceUpdateReady, one PVC volume per volumeClaimTemplate), the pod
// webhook's KruisePodReady gate (pkg/webhook/pod/mutating
// injectPodReadinessGate), lifecycle state Normal with its timestamp
// (pkg/util/lifecycle SetPodLifecycle). inPlaceFrom, when set, is the image
// the pod ran before OpenKruise updated it in place to the revision
// (pkg/util/inplaceupdate: the apps.kruise.io/inplace-update-state annotation
// stays after completion).
func okPod(cs *appsv1alpha1.CloneSet, rev *appsv1.ControllerRevision, image, id, inPlaceFrom string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: *cs.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *cs.Spec.Template.Spec.DeepCopy(),
	}
	p.Name, p.GenerateName, p.Namespace = cs.Name+"-"+id, cs.Name+"-", cs.Namespace
	p.OwnerReferences = []metav1.OwnerReference{okControllerRef(cs)}
	p.Spec.Containers[0].Image = image
	short := rev.Labels["controller.kubernetes.io/hash"]
	maps.Copy(p.Labels, map[string]string{
		pub.ControllerRevisionHashLabelKey: rev.Name,
		pub.PodTemplateHashLabelKey:        short,
		pub.CloneSetInstanceID:             id,
		pub.LifecycleStateKey:              string(pub.LifecycleStateNormal),
	})
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[pub.LifecycleTimestampKey] = "2026-11-01T10:00:00Z"
	if inPlaceFrom != "" {
		p.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"` + rev.Name + `","updateTimestamp":"2026-11-01T10:05:00Z",` +
			`"lastContainerStatuses":{"main":{"imageID":"` + inPlaceFrom + `@sha256:0123"}},"updateImages":true,` +
			`"containerBatchesRecord":[{"timestamp":"2026-11-01T10:05:00Z","containers":["main"]}]}`
	}
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates,
		corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady},
		corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vct.Name + "-" + cs.Name + "-" + id}}})
	}
	return p
}

// okPVC mirrors OpenKruise v1.9 cloneset utils / sync createPods: PVC
// <vct>-<cs>-<id>, labels = selector matchLabels + instance id, controlled
// by the CloneSet.
func okPVC(cs *appsv1alpha1.CloneSet, vct corev1.PersistentVolumeClaim, id string) *corev1.PersistentVolumeClaim {
	labels := maps.Clone(cs.Spec.Selector.MatchLabels)
	labels[pub.CloneSetInstanceID] = id
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: vct.Name + "-" + cs.Name + "-" + id, Namespace: cs.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{okControllerRef(cs)},
		},
		Spec: vct.Spec,
	}
}

// okSet describes one CloneSet as OpenKruise left it: images[i] is the
// template of revision i+1 (the last one is the CloneSet's spec), updated
// pods run the last one (in place from the one before), the rest the first.
type okSet struct {
	name     string
	replicas int32
	images   []string
	updated  int32
	mutate   func(*appsv1alpha1.CloneSet)
	// flotillaBefore: revisions as an older Flotilla wrote them (the
	// controller upgrade, not a takeover).
	flotillaBefore bool
}

// okState is what applyOpenKruise wrote.
type okState struct {
	cs        *appsv1alpha1.CloneSet
	revisions []*appsv1.ControllerRevision
	pods      []*corev1.Pod
}

// applyOpenKruise writes the CloneSet, its ControllerRevisions, PVCs and
// pods, waits until the pods run and are Ready (kwok) with OpenKruise's
// conditions, then writes the status OpenKruise's calculateStatus gives
// (pkg/controller/cloneset/cloneset_status.go: currentRevision stays the
// first revision while not all pods are updated).
func (h *harness) applyOpenKruise(s okSet) okState {
	t := h.t
	t.Helper()
	ctx := context.Background()
	last := s.images[len(s.images)-1]
	cs := h.create(newCloneSet(s.name, s.replicas, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = last
		cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		if s.mutate != nil {
			s.mutate(cs)
		}
	}))
	st := okState{cs: cs}
	for i, img := range s.images {
		c := cs.DeepCopy()
		c.Spec.Template.Spec.Containers[0].Image = img
		r, err := h.env.Kube.AppsV1().ControllerRevisions(h.ns).Create(ctx, okRevision(t, c, int64(i+1), s.flotillaBefore), metav1.CreateOptions{})
		require.NoError(t, err)
		st.revisions = append(st.revisions, r)
	}
	first, update := st.revisions[0], st.revisions[len(st.revisions)-1]
	for i := range s.replicas {
		id := fmt.Sprintf("k%04d", i)
		rev, img, from := first, s.images[0], ""
		if i >= s.replicas-s.updated {
			rev, img = update, last
			if len(s.images) > 1 {
				from = s.images[len(s.images)-2]
			}
		}
		for _, vct := range cs.Spec.VolumeClaimTemplates {
			_, err := h.env.Kube.CoreV1().PersistentVolumeClaims(h.ns).Create(ctx, okPVC(cs, vct, id), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		p, err := h.env.Kube.CoreV1().Pods(h.ns).Create(ctx, okPod(cs, rev, img, id, from), metav1.CreateOptions{})
		require.NoError(t, err)
		st.pods = append(st.pods, p)
	}
	// OpenKruise's inplaceupdate Refresh sets InPlaceUpdateReady and its
	// podreadiness controller KruisePodReady once the pod exists.
	now := time.Now().UTC().Format(time.RFC3339)
	for _, p := range st.pods {
		h.env.PatchPodStatus(t, h.ns, p.Name, `{"status":{"conditions":[`+
			`{"type":"InPlaceUpdateReady","status":"True","lastTransitionTime":"`+now+`"},`+
			`{"type":"KruisePodReady","status":"True","lastTransitionTime":"`+now+`"}]}}`)
	}
	h.waitPods(s.name, "all ready", allReady(int(s.replicas)))
	cur := first.Name
	if s.updated == s.replicas {
		cur = update.Name
	}
	h.sets.ModifyStatus(s.name, func(c *appsv1alpha1.CloneSet) {
		c.Status = appsv1alpha1.CloneSetStatus{
			ObservedGeneration: c.Generation, Replicas: s.replicas, ReadyReplicas: s.replicas, AvailableReplicas: s.replicas,
			UpdatedReplicas: s.updated, UpdatedReadyReplicas: s.updated, UpdatedAvailableReplicas: s.updated,
			ExpectedUpdatedReplicas: s.updated, UpdateRevision: update.Name, CurrentRevision: cur,
			CollisionCount: ptr.To[int32](0), LabelSelector: "app=" + s.name,
		}
	})
	st.cs = h.get(s.name)
	// Re-read the pods: the snapshot the takeover is compared with.
	for i, p := range st.pods {
		got, err := h.env.Kube.CoreV1().Pods(h.ns).Get(ctx, p.Name, metav1.GetOptions{})
		require.NoError(t, err)
		st.pods[i] = got
	}
	return st
}
