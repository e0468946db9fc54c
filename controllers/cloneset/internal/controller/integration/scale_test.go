package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/cloneset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Item 1: create, scale up and down; pod names, labels, owner refs,
// readiness gates; status and revision.
func TestScaleUpAndDown(t *testing.T) {
	h := newHarness(t)
	h.startController()
	cs := h.create(newCloneSet("web", 3))
	pods := h.waitPods("web", "3 ready pods", allReady(3))
	st := h.waitStatus("web", "3 settled", settled(3))

	revs := h.revisions(cs)
	require.Len(t, revs, 1)
	assert.Equal(t, revs[0].Name, st.Status.UpdateRevision)
	assert.True(t, strings.HasPrefix(revs[0].Name, "web-"))
	assert.Equal(t, "app=web", st.Status.LabelSelector)
	assert.Equal(t, int32(3), st.Status.ExpectedUpdatedReplicas)
	for _, p := range pods {
		id := p.Labels[pub.CloneSetInstanceID]
		assert.Len(t, id, 5)
		assert.Equal(t, "web-"+id, p.Name)
		assert.Equal(t, revs[0].Name, p.Labels[pub.ControllerRevisionHashLabelKey], "full revision name without CloneSetShortHash")
		assert.Equal(t, strings.TrimPrefix(revs[0].Name, "web-"), p.Labels[pub.PodTemplateHashLabelKey])
		assert.Equal(t, string(pub.LifecycleStateNormal), p.Labels[pub.LifecycleStateKey])
		ref := metav1.GetControllerOf(&p)
		require.NotNil(t, ref)
		assert.Equal(t, cs.UID, ref.UID)
		assert.Equal(t, "CloneSet", ref.Kind)
		assert.Contains(t, p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	}

	h.modify("web", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(5)) })
	h.waitPods("web", "5 ready pods", allReady(5))
	h.waitStatus("web", "5 settled", settled(5))

	h.modify("web", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(2)) })
	h.waitPods("web", "2 ready pods", allReady(2))
	h.waitStatus("web", "2 settled", settled(2))
}

// Item 1: with gate CloneSetShortHash, controller-revision-hash holds only the hash.
func TestShortHash(t *testing.T) {
	h := newHarness(t)
	h.gates[features.CloneSetShortHash] = true
	h.startController()
	h.create(newCloneSet("short", 2))
	st := h.waitStatus("short", "2 settled", settled(2))
	hash := strings.TrimPrefix(st.Status.UpdateRevision, "short-")
	for _, p := range h.pods("short") {
		assert.Equal(t, hash, p.Labels[pub.ControllerRevisionHashLabelKey])
	}
	// An update still recognises the pods as at the old revision and replaces them.
	h.modify("short", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = imageV2 })
	h.waitPods("short", "both on v2", func(pods []corev1.Pod) bool { return allReady(2)(pods) && allImage(pods, imageV2) })
	h.waitStatus("short", "2 settled on the new revision", settled(2))
}

// Item 1: volumeClaimTemplates give each instance its PVC; a pod deleted by
// someone else is recreated with the same instance id and PVC; with
// disablePVCReuse it gets a fresh id and a fresh PVC.
func TestPVCsAndReuse(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disablePVCReuse=%v", disable), func(t *testing.T) {
			h := newHarness(t)
			h.startController()
			name := "vol"
			cs := h.create(newCloneSet(name, 2, withVolume, func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.DisablePVCReuse = disable }))
			pods := h.waitPods(name, "2 ready", allReady(2))
			for _, p := range pods {
				id := p.Labels[pub.CloneSetInstanceID]
				pvc := h.pvc("data-vol-" + id)
				assert.Equal(t, id, pvc.Labels[pub.CloneSetInstanceID])
				assert.Equal(t, name, pvc.Labels["app"], "selector labels")
				require.NotNil(t, metav1.GetControllerOf(pvc))
				assert.Equal(t, cs.UID, metav1.GetControllerOf(pvc).UID)
				assert.Equal(t, "data-vol-"+id, volumeClaim(p, "data"))
			}
			victim := pods[0]
			vid := victim.Labels[pub.CloneSetInstanceID]
			vpvc := h.pvc("data-vol-" + vid)
			require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), victim.Name, metav1.DeleteOptions{}))
			after := h.waitPods(name, "replacement ready", func(ps []corev1.Pod) bool {
				if !allReady(2)(ps) {
					return false
				}
				if disable {
					return !slices.Contains(names(ps), victim.Name)
				}
				uid := uids(ps)[victim.Name]
				return uid != "" && uid != victim.UID
			})
			if disable {
				for _, p := range after {
					assert.NotEqual(t, vid, p.Labels[pub.CloneSetInstanceID], "a fresh instance id")
				}
				testenv.Eventually(t, waitTimeout, func() (bool, error) {
					pvc, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), vpvc.Name, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, nil
					}
					return err == nil && pvc.DeletionTimestamp != nil, err
				})
			} else {
				assert.Equal(t, vpvc.UID, h.pvc(vpvc.Name).UID, "the recreated instance mounts the same PVC object")
			}
			// Scale-in deletes the pod's PVC with it.
			h.modify(name, func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(1)) })
			h.waitPods(name, "1 ready", allReady(1))
			testenv.Eventually(t, waitTimeout, func() (bool, error) {
				list, err := h.Env.Kube.CoreV1().PersistentVolumeClaims(h.NS).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				live := 0
				for _, pvc := range list.Items {
					if pvc.DeletionTimestamp == nil {
						live++
					}
				}
				if live != 1 {
					return false, fmt.Errorf("%d live PVCs", live)
				}
				return true, nil
			})
		})
	}
}

// Item 1: scaleStrategy.maxUnavailable holds back creations while pods are
// unavailable.
func TestScaleMaxUnavailable(t *testing.T) {
	h := newHarness(t)
	h.startController()
	// Pods never become ready: every created pod stays unavailable.
	h.create(newCloneSet("limited", 4, neverReady, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	}))
	ev := h.waitEvent("limited", "ScaleUpLimited")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type, "ScaleUpLimited is a Warning, as OpenKruise's")
	testenv.Consistently(t, 3*time.Second, func() error {
		if n := len(h.pods("limited")); n > 2 {
			return fmt.Errorf("%d pods created while 2 are unavailable", n)
		}
		return nil
	})
	assert.Len(t, h.pods("limited"), 2)
	// Once pods become ready, the rest are created.
	for _, p := range h.pods("limited") {
		h.patchPod(p.Name, `{"metadata":{"annotations":{"`+unreadyAnnotation+`":null}}}`)
	}
	h.waitPods("limited", "4 pods", func(ps []corev1.Pod) bool { return len(ps) == 4 })
}

// Item 1: podsToDelete and the specified-delete label delete exactly the
// named pods and replace them; names are trimmed from podsToDelete.
func TestSpecifiedDelete(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("pick", 3))
	pods := h.waitPods("pick", "3 ready", allReady(3))
	h.modify("pick", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{pods[0].Name} })
	h.patchPod(pods[1].Name, `{"metadata":{"labels":{"`+pub.SpecifiedDeleteKey+`":"true"}}}`)
	after := h.waitPods("pick", "two named pods replaced", func(ps []corev1.Pod) bool {
		return allReady(3)(ps) && !slices.Contains(names(ps), pods[0].Name) && !slices.Contains(names(ps), pods[1].Name)
	})
	assert.Contains(t, names(after), pods[2].Name, "the third pod is untouched")
	assert.Equal(t, pods[2].UID, uids(after)[pods[2].Name])
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		return len(h.get("pick").Spec.ScaleStrategy.PodsToDelete) == 0, nil
	})
	assert.Empty(t, eventsWithReason(h.events("pick"), controller.ReasonPodsToDeleteNotFound), "no warning for names of pods that were deleted")
}

// Item 1 (v0.9 seed): with maxSurge, a specified-delete pod is replaced
// before it is deleted, so the CloneSet never drops below replicas.
func TestSpecifiedDeleteReplaceBeforeDelete(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("surge", 3, surgeFirst))
	pods := h.waitPods("surge", "3 ready", allReady(3))
	w := h.watchInvariants("surge", invariants{maxPods: 4, minReady: 3})
	h.modify("surge", func(cs *appsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = []string{pods[1].Name} })
	h.waitPods("surge", "replaced", func(ps []corev1.Pod) bool { return allReady(3)(ps) && !slices.Contains(names(ps), pods[1].Name) })
	w.check(t)
	assert.Equal(t, 4, w.peakPods(), "a 4th pod was created before the named one went")
}

// Item 1: scale-down removes pods in the reference's order; here the lowest
// controller.kubernetes.io/pod-deletion-cost goes first.
func TestScaleDownOrder(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("order", 4))
	pods := h.waitPods("order", "4 ready", allReady(4))
	costs := map[string]string{pods[0].Name: "100", pods[1].Name: "-50", pods[2].Name: "10", pods[3].Name: "-10"}
	for n, c := range costs {
		h.patchPod(n, `{"metadata":{"annotations":{"`+pub.PodDeletionCostAnnotation+`":"`+c+`"}}}`)
	}
	h.modify("order", func(cs *appsv1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To(int32(2)) })
	after := h.waitPods("order", "2 left", allReady(2))
	assert.ElementsMatch(t, []string{pods[0].Name, pods[2].Name}, names(after), "the two with the highest deletion cost stay")
}
