package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	"github.com/flotilla-dev/flotilla/kit/testenv/openkruise"
)

// Fixtures: an Advanced StatefulSet, its revisions and pods exactly as
// OpenKruise v1.9.0's kruise-manager leaves them (kit/testenv/openkruise).

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
	t := h.T
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
		r, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Create(ctx, openkruise.StatefulSetRevision(t, c, int64(i+1), s.flotillaBefore), metav1.CreateOptions{})
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
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", vct.Name, set.Name, ord), Namespace: h.NS, Labels: maps.Clone(set.Spec.Selector.MatchLabels)},
				Spec:       vct.Spec,
			}
			_, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).Create(ctx, pvc, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		_, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, openkruise.StatefulSetPod(set, rev, img, ord, from), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// inplaceupdate Refresh (InPlaceUpdateReady) and the podreadiness
	// controller (KruisePodReady) set their conditions True.
	now := time.Now().UTC().Format(time.RFC3339)
	for ord := range int(s.replicas) {
		h.Env.PatchPodStatus(t, h.NS, fmt.Sprintf("%s-%d", s.name, ord), openkruise.ReadyConditions(now))
	}
	h.waitPods(s.name, "all ready", func(ps []corev1.Pod) bool { return len(ps) == int(s.replicas) && lab.RunningReady(ps) })
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
	revisions := h.Env.Kube.AppsV1().ControllerRevisions(h.NS)
	before, err := revisions.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	writes := testenv.WatchPodWrites(t, h.Env.Kube, h.NS)

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
