// Package openkruise builds objects exactly as OpenKruise v1.9.0's
// kruise-manager leaves them — ControllerRevisions, pods and claims of
// CloneSets and Advanced StatefulSets — for the takeover tests (integration
// tests of cloneset and statefulset, the bench). It is written from reading
// OpenKruise's source, never from Flotilla's code, so that a takeover test
// compares Flotilla with OpenKruise, not with itself. Only tests import it.
package openkruise

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"
	"testing"

	"github.com/davecgh/go-spew/spew"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// LifecycleTimestamp is the lifecycle timestamp every fixture pod carries.
const LifecycleTimestamp = "2026-11-01T10:00:00Z"

// TemplatePatch is a revision's data as OpenKruise v1.9 writes it for a
// CloneSet (pkg/controller/cloneset/revision realControl.getPatch) or an
// Advanced StatefulSet (pkg/controller/statefulset stateful_set_utils
// getPatch): the whole workload encoded with encoding/json, decoded into a
// map, spec.template kept under a fresh "spec" with "$patch":"replace", and
// the map encoded again. OpenKruise v1.9 is built with Kubernetes 1.32 types,
// whose metav1.ObjectMeta writes a zero creationTimestamp as null; the types
// here omit it, so the null is put back, as that encoder wrote it.
//
// flotillaBefore leaves the null out: the bytes Flotilla wrote before it
// matched OpenKruise (what clusters already running Flotilla hold).
func TemplatePatch(t testing.TB, workload any, flotillaBefore bool) []byte {
	t.Helper()
	whole, err := json.Marshal(workload)
	if err != nil {
		t.Fatalf("openkruise: encoding %T: %v", workload, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(whole, &raw); err != nil {
		t.Fatalf("openkruise: decoding %T: %v", workload, err)
	}
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
	if err != nil {
		t.Fatalf("openkruise: encoding revision data: %v", err)
	}
	return out
}

// Hash mirrors k8s.io/kubernetes 1.32 pkg/controller/history
// HashControllerRevision: FNV-1 32 (hash/fnv.New32) of the raw data, then the
// decimal collision count, printed in decimal through rand.SafeEncodeString.
func Hash(data []byte, collisionCount int32) string {
	h := fnv.New32()
	_, _ = h.Write(data)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// VCTHash mirrors OpenKruise v1.9 pkg/util/volumeclaimtemplate
// PatchVCTemplateHash / getExpectHash: "" without templates; otherwise the
// templates reduced to {name, spec}, sorted by name, encoded with
// encoding/json (Kubernetes 1.32 types: "creationTimestamp":null in metadata
// and an empty "status":{}), and that byte slice hashed with FNV-1a 32
// through k8s.io/kubernetes pkg/util/hash DeepHashObject (spew %#v, sorted
// keys, methods disabled).
func VCTHash(t testing.TB, vcts []corev1.PersistentVolumeClaim) string {
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
	if err != nil {
		t.Fatalf("openkruise: encoding volumeClaimTemplates: %v", err)
	}
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", b)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// hashed is what history.NewControllerRevision derives from a workload: the
// revision data, its hash and the labels (template labels +
// controller.kubernetes.io/hash).
func hashed(t testing.TB, workload any, collisionCount *int32, tmplLabels map[string]string, flotillaBefore bool) ([]byte, string, map[string]string) {
	t.Helper()
	data := TemplatePatch(t, workload, flotillaBefore)
	hash := Hash(data, ptr.Deref(collisionCount, 0))
	labels := maps.Clone(tmplLabels)
	labels["controller.kubernetes.io/hash"] = hash
	return data, hash, labels
}

// CloneSetRef is the controllerRef OpenKruise puts on a CloneSet's objects.
func CloneSetRef(cs *appsv1alpha1.CloneSet) metav1.OwnerReference {
	return *metav1.NewControllerRef(cs, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
}

// CloneSetRevision mirrors OpenKruise v1.9 realControl.NewRevision:
// history.NewControllerRevision (name <cs>-<hash>, labels = template labels +
// controller.kubernetes.io/hash, controllerRef to the CloneSet), every
// CloneSet annotation copied, PatchVCTemplateHash.
func CloneSetRevision(t testing.TB, cs *appsv1alpha1.CloneSet, number int64, flotillaBefore bool) *appsv1.ControllerRevision {
	t.Helper()
	data, hash, labels := hashed(t, cs, cs.Status.CollisionCount, cs.Spec.Template.Labels, flotillaBefore)
	annotations := maps.Clone(cs.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[pub.CloneSetVolumeClaimTemplateHashKey] = VCTHash(t, cs.Spec.VolumeClaimTemplates)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs.Name + "-" + hash, Namespace: cs.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{CloneSetRef(cs)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// CloneSetPod mirrors what OpenKruise v1.9 leaves on a CloneSet pod once it
// is Normal: pkg/controller/cloneset/utils NewPodsFromRevisions / core
// newVersionedPods (name <cs>-<id>, generateName <cs>-, template labels and
// annotations, controller-revision-hash = revision name, pod-template-hash =
// short hash, apps.kruise.io/cloneset-instance-id, readiness gate
// InPlaceUpdateReady, one PVC volume per volumeClaimTemplate), the pod
// webhook's KruisePodReady gate (pkg/webhook/pod/mutating
// injectPodReadinessGate), lifecycle state Normal with its timestamp
// (pkg/util/lifecycle SetPodLifecycle). inPlaceFrom, when set, is the image
// the pod ran before OpenKruise updated it in place to the revision.
func CloneSetPod(cs *appsv1alpha1.CloneSet, rev *appsv1.ControllerRevision, image, id, inPlaceFrom string) *corev1.Pod {
	p := fromTemplate(&cs.Spec.Template, rev, image, inPlaceFrom)
	p.Name, p.GenerateName, p.Namespace = cs.Name+"-"+id, cs.Name+"-", cs.Namespace
	p.OwnerReferences = []metav1.OwnerReference{CloneSetRef(cs)}
	maps.Copy(p.Labels, map[string]string{
		pub.PodTemplateHashLabelKey: rev.Labels["controller.kubernetes.io/hash"],
		pub.CloneSetInstanceID:      id,
	})
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates,
		corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady},
		corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		p.Spec.Volumes = append(p.Spec.Volumes, claimVolume(vct.Name, vct.Name+"-"+cs.Name+"-"+id))
	}
	return p
}

// CloneSetPVC mirrors OpenKruise v1.9 cloneset utils / sync createPods: PVC
// <vct>-<cs>-<id>, labels = selector matchLabels + instance id, controlled
// by the CloneSet.
func CloneSetPVC(cs *appsv1alpha1.CloneSet, vct corev1.PersistentVolumeClaim, id string) *corev1.PersistentVolumeClaim {
	labels := maps.Clone(cs.Spec.Selector.MatchLabels)
	labels[pub.CloneSetInstanceID] = id
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: vct.Name + "-" + cs.Name + "-" + id, Namespace: cs.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{CloneSetRef(cs)},
		},
		Spec: vct.Spec,
	}
}

// StatefulSetRevision mirrors OpenKruise v1.9 newRevision:
// history.NewControllerRevision (name <set>-<Hash>, labels = template labels
// + controller.kubernetes.io/hash, controllerRef) and every set annotation.
func StatefulSetRevision(t testing.TB, set *appsv1beta1.StatefulSet, number int64, flotillaBefore bool) *appsv1.ControllerRevision {
	t.Helper()
	data, hash, labels := hashed(t, set, set.Status.CollisionCount, set.Spec.Template.Labels, flotillaBefore)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: set.Name + "-" + hash, Namespace: set.Namespace, Labels: labels, Annotations: maps.Clone(set.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// StatefulSetPod mirrors OpenKruise v1.9 newVersionedStatefulSetPod:
// GetPodFromTemplate (template labels/annotations, generateName <set>-,
// controllerRef), initIdentity / updateIdentity (name <set>-<ordinal>,
// hostname, subdomain = serviceName, statefulset.kubernetes.io/pod-name and,
// PodIndexLabel on, apps.kubernetes.io/pod-index), updateStorage (claim
// <vct>-<set>-<ordinal>), setPodRevision (controller-revision-hash = revision
// name), lifecycle Normal with its timestamp (no preNormal hook), the pod
// webhook's KruisePodReady gate; inPlaceFrom as in CloneSetPod.
func StatefulSetPod(set *appsv1beta1.StatefulSet, rev *appsv1.ControllerRevision, image string, ordinal int, inPlaceFrom string) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", set.Name, ordinal)
	p := fromTemplate(&set.Spec.Template, rev, image, inPlaceFrom)
	p.Name, p.GenerateName, p.Namespace = name, set.Name+"-", set.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"))}
	p.Spec.Hostname, p.Spec.Subdomain = name, set.Spec.ServiceName
	maps.Copy(p.Labels, map[string]string{
		appsv1.StatefulSetPodNameLabel: name,
		appsv1.PodIndexLabel:           strconv.Itoa(ordinal),
	})
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	for _, vct := range set.Spec.VolumeClaimTemplates {
		p.Spec.Volumes = append(p.Spec.Volumes, claimVolume(vct.Name, fmt.Sprintf("%s-%s", vct.Name, name)))
	}
	return p
}

// fromTemplate is what both workloads' pods share: the template, the first
// container's image, controller-revision-hash, lifecycle Normal with its
// timestamp and, after an in-place update from inPlaceFrom, the
// apps.kruise.io/inplace-update-state annotation (pkg/util/inplaceupdate: it
// stays after completion).
func fromTemplate(tmpl *corev1.PodTemplateSpec, rev *appsv1.ControllerRevision, image, inPlaceFrom string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	p.Spec.Containers[0].Image = image
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[pub.ControllerRevisionHashLabelKey] = rev.Name
	p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[pub.LifecycleTimestampKey] = LifecycleTimestamp
	if inPlaceFrom != "" {
		p.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"` + rev.Name + `","updateTimestamp":"2026-11-01T10:05:00Z",` +
			`"lastContainerStatuses":{"main":{"imageID":"` + inPlaceFrom + `@sha256:0123"}},"updateImages":true,` +
			`"containerBatchesRecord":[{"timestamp":"2026-11-01T10:05:00Z","containers":["main"]}]}`
	}
	return p
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// ReadyConditions is the status patch that sets InPlaceUpdateReady (set by
// OpenKruise's inplaceupdate Refresh) and KruisePodReady (its podreadiness
// controller) True, at now (RFC 3339).
func ReadyConditions(now string) string {
	return `{"status":{"conditions":[` +
		`{"type":"InPlaceUpdateReady","status":"True","lastTransitionTime":"` + now + `"},` +
		`{"type":"KruisePodReady","status":"True","lastTransitionTime":"` + now + `"}]}}`
}
