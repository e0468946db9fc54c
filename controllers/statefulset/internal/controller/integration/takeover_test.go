package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Fixtures: an Advanced StatefulSet exactly as OpenKruise v1.9.0's
// kruise-manager leaves it, written from reading its source.

// okSetRevisionData mirrors OpenKruise v1.9
// pkg/controller/statefulset/stateful_set_utils.go getPatch: the whole
// StatefulSet encoded with encoding/json (v1beta1 codec, Kubernetes 1.32
// types: the template's zero creationTimestamp written as null, which this
// test's newer types omit, so it is put back), decoded into a map,
// spec.template kept with "$patch":"replace", encoded again. flotillaBefore
// leaves the null out: what Flotilla wrote before matching OpenKruise.
func okSetRevisionData(t *testing.T, set *appsv1beta1.StatefulSet, flotillaBefore bool) []byte {
	t.Helper()
	whole, err := json.Marshal(set)
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

// okSetRevision mirrors OpenKruise v1.9 newRevision:
// history.NewControllerRevision (k8s.io/kubernetes 1.32: name
// <set>-<HashControllerRevision>, FNV-1 32 of data then the decimal
// collision count through rand.SafeEncodeString; labels = template labels +
// controller.kubernetes.io/hash; controllerRef) and every set annotation.
func okSetRevision(t *testing.T, set *appsv1beta1.StatefulSet, number int64, flotillaBefore bool) *appsv1.ControllerRevision {
	t.Helper()
	data := okSetRevisionData(t, set, flotillaBefore)
	h := fnv.New32()
	_, _ = h.Write(data)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(ptr.Deref(set.Status.CollisionCount, 0)), 10)))
	hash := utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
	labels := maps.Clone(set.Spec.Template.Labels)
	labels["controller.kubernetes.io/hash"] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: set.Name + "-" + hash, Namespace: set.Namespace, Labels: labels, Annotations: maps.Clone(set.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// okSetPod mirrors OpenKruise v1.9 newVersionedStatefulSetPod:
// GetPodFromTemplate (template labels/annotations, generateName <set>-,
// controllerRef), initIdentity / updateIdentity (name <set>-<ordinal>,
// hostname, subdomain = serviceName, statefulset.kubernetes.io/pod-name and,
// PodIndexLabel on, apps.kubernetes.io/pod-index), updateStorage (claim
// <vct>-<set>-<ordinal>), setPodRevision (controller-revision-hash = revision
// name), lifecycle Normal with its timestamp (no preNormal hook), the pod
// webhook's KruisePodReady gate; inPlaceFrom: the image before OpenKruise's
// in-place update (apps.kruise.io/inplace-update-state stays afterwards).
func okSetPod(set *appsv1beta1.StatefulSet, rev *appsv1.ControllerRevision, image string, ordinal int, inPlaceFrom string) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", set.Name, ordinal)
	p := &corev1.Pod{ObjectMeta: *set.Spec.Template.ObjectMeta.DeepCopy(), Spec: *set.Spec.Template.Spec.DeepCopy()}
	p.Name, p.GenerateName, p.Namespace = name, set.Name+"-", set.Namespace
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"))}
	p.Spec.Hostname, p.Spec.Subdomain = name, set.Spec.ServiceName
	p.Spec.Containers[0].Image = image
	maps.Copy(p.Labels, map[string]string{
		appsv1.StatefulSetPodNameLabel:     name,
		appsv1.PodIndexLabel:               strconv.Itoa(ordinal),
		pub.ControllerRevisionHashLabelKey: rev.Name,
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
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	for _, vct := range set.Spec.VolumeClaimTemplates {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("%s-%s", vct.Name, name)}}})
	}
	return p
}

// okSetSpec: images[i] is revision i+1's template (the last is the spec);
// the highest `updated` ordinals run the last revision (updated in place
// from the one before), the rest the first — OpenKruise's order.
type okSetSpec struct {
	name           string
	replicas       int32
	images         []string
	updated        int32
	mutate         func(*appsv1beta1.StatefulSet)
	flotillaBefore bool
}

// applyOpenKruiseSet writes the set, its revisions, PVCs (labels = selector
// matchLabels, no ownerRefs under Retain/Retain: stateful_set_utils
// getPersistentVolumeClaims) and pods, waits for them to be Ready, writes the
// status OpenKruise's updateStatefulSetStatus gives, and returns the set.
func (h *harness) applyOpenKruiseSet(s okSetSpec) *appsv1beta1.StatefulSet {
	t := h.t
	t.Helper()
	ctx := context.Background()
	last := s.images[len(s.images)-1]
	set := h.create(newSet(s.name, s.replicas, parallel, func(set *appsv1beta1.StatefulSet) {
		set.Spec.Template.Spec.Containers[0].Image = last
		set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		if set.Spec.UpdateStrategy.RollingUpdate == nil {
			set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		set.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		if s.mutate != nil {
			s.mutate(set)
		}
	}))
	var revs []*appsv1.ControllerRevision
	for i, img := range s.images {
		c := set.DeepCopy()
		c.Spec.Template.Spec.Containers[0].Image = img
		r, err := h.env.Kube.AppsV1().ControllerRevisions(h.ns).Create(ctx, okSetRevision(t, c, int64(i+1), s.flotillaBefore), metav1.CreateOptions{})
		require.NoError(t, err)
		revs = append(revs, r)
	}
	first, update := revs[0], revs[len(revs)-1]
	for ord := range int(s.replicas) {
		rev, img, from := first, s.images[0], ""
		if ord >= int(s.replicas-s.updated) {
			rev, img = update, last
			if len(s.images) > 1 {
				from = s.images[len(s.images)-2]
			}
		}
		for _, vct := range set.Spec.VolumeClaimTemplates {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", vct.Name, set.Name, ord), Namespace: h.ns, Labels: maps.Clone(set.Spec.Selector.MatchLabels)},
				Spec:       vct.Spec,
			}
			_, err := h.env.Kube.CoreV1().PersistentVolumeClaims(h.ns).Create(ctx, pvc, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		_, err := h.env.Kube.CoreV1().Pods(h.ns).Create(ctx, okSetPod(set, rev, img, ord, from), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// inplaceupdate Refresh (InPlaceUpdateReady) and the podreadiness
	// controller (KruisePodReady) set their conditions True.
	now := time.Now().UTC().Format(time.RFC3339)
	for ord := range int(s.replicas) {
		h.env.PatchPodStatus(t, h.ns, fmt.Sprintf("%s-%d", s.name, ord), `{"status":{"conditions":[`+
			`{"type":"InPlaceUpdateReady","status":"True","lastTransitionTime":"`+now+`"},`+
			`{"type":"KruisePodReady","status":"True","lastTransitionTime":"`+now+`"}]}}`)
	}
	h.waitPods(s.name, "all ready", func(ps []corev1.Pod) bool {
		if len(ps) != int(s.replicas) {
			return false
		}
		for i := range ps {
			if ps[i].Status.Phase != corev1.PodRunning || !podReady(&ps[i]) {
				return false
			}
		}
		return true
	})
	cur := first.Name
	if s.updated == s.replicas {
		cur = update.Name
	}
	return h.sets.ModifyStatus(s.name, func(c *appsv1beta1.StatefulSet) {
		c.Status = appsv1beta1.StatefulSetStatus{
			ObservedGeneration: c.Generation, Replicas: s.replicas, ReadyReplicas: s.replicas, AvailableReplicas: s.replicas,
			CurrentReplicas: s.replicas - s.updated, UpdatedReplicas: s.updated, UpdatedReadyReplicas: s.updated,
			UpdatedAvailableReplicas: s.updated, CurrentRevision: cur, UpdateRevision: update.Name,
			CollisionCount: ptr.To[int32](0), LabelSelector: "app=" + s.name,
		}
		if cur == update.Name {
			c.Status.CurrentReplicas = s.replicas
		}
	})
}

// Issue 23: Advanced StatefulSets as OpenKruise v1.9 leaves them — converged
// with claims, and mid-rollout at partition 2 of 4 — and one whose revisions
// an older Flotilla wrote: the controller takes them over without deleting,
// restarting or relabelling a pod, without a new ControllerRevision, and the
// status stays as OpenKruise wrote it.
func TestTakeoverFromOpenKruise(t *testing.T) {
	h := newHarness(t)
	specs := []okSetSpec{
		{name: "ok-conv", replicas: 3, images: []string{imageV1}, updated: 3, mutate: withClaim},
		{name: "ok-part", replicas: 4, images: []string{imageV1, imageV2}, updated: 2, mutate: rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
			r.Partition = ptr.To[int32](2)
		})},
		{name: "fl-upgrade", replicas: 2, images: []string{imageV1, imageV2}, updated: 2, flotillaBefore: true},
	}
	sets := map[string]*appsv1beta1.StatefulSet{}
	for _, s := range specs {
		sets[s.name] = h.applyOpenKruiseSet(s)
	}
	revisions := h.env.Kube.AppsV1().ControllerRevisions(h.ns)
	before, err := revisions.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	writes := testenv.WatchPodWrites(t, h.env.Kube, h.ns)

	var taken []string
	for _, s := range specs {
		taken = append(taken, names(h.pods(s.name))...)
	}

	h.startController()
	// Proof the controller is running and past its first pass over the
	// sets it found: a set created now comes up (its pods are not counted).
	h.create(newSet("sentinel", 1))
	h.waitStatus("sentinel", "settled", settled(1))
	testenv.Consistently(t, 5*time.Second, func() error { return writes.Untouched(0, taken...) })

	after, err := revisions.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, revisionKeys(before.Items), revisionKeys(after.Items), "no ControllerRevision created, deleted or changed")
	for _, s := range specs {
		got := h.get(s.name)
		assert.Equal(t, sets[s.name].Status, got.Status, "%s: status", s.name)
		imgs := map[string]int{}
		for _, p := range h.pods(s.name) {
			imgs[p.Spec.Containers[0].Image]++
		}
		assert.Equal(t, int(s.updated), imgs[s.images[len(s.images)-1]], "%s: pods on the update revision", s.name)
	}
}

func revisionKeys(items []appsv1.ControllerRevision) map[string]string {
	out := map[string]string{}
	for _, r := range items {
		if strings.HasPrefix(r.Name, "sentinel-") {
			continue
		}
		out[r.Name] = fmt.Sprintf("%s #%d %s", r.UID, r.Revision, r.Data.Raw)
	}
	return out
}
