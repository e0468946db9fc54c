package integration

import (
	"context"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv/openkruise"
)

// Fixtures: a CloneSet, its revisions, claims and pods exactly as
// OpenKruise v1.9.0's kruise-manager leaves them (kit/testenv/openkruise).

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
	t := h.T
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
		r, err := h.Env.Kube.AppsV1().ControllerRevisions(h.NS).Create(ctx, openkruise.CloneSetRevision(t, c, int64(i+1), s.flotillaBefore), metav1.CreateOptions{})
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
			_, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).Create(ctx, openkruise.CloneSetPVC(cs, vct, id), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(ctx, openkruise.CloneSetPod(cs, rev, img, id, from), metav1.CreateOptions{})
		require.NoError(t, err)
		st.pods = append(st.pods, p)
	}
	// OpenKruise's inplaceupdate Refresh sets InPlaceUpdateReady and its
	// podreadiness controller KruisePodReady once the pod exists.
	now := time.Now().UTC().Format(time.RFC3339)
	for _, p := range st.pods {
		h.Env.PatchPodStatus(t, h.NS, p.Name, openkruise.ReadyConditions(now))
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
		got, err := h.Env.Kube.CoreV1().Pods(h.NS).Get(ctx, p.Name, metav1.GetOptions{})
		require.NoError(t, err)
		st.pods[i] = got
	}
	return st
}
