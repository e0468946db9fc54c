package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func images(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"="+strings.TrimPrefix(p.Spec.Containers[0].Image, "registry.local/db:"))
	}
	return strings.Join(out, " ")
}

// TestRollingUpdatePartitionOrderedReady: the pods at or above the partition
// are recreated at the new revision from the highest ordinal down, each after
// the previous one is Ready again; the others keep the old revision, and
// currentRevision moves only once every pod is updated and Ready.
func TestRollingUpdatePartitionOrderedReady(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("web", 5))
	old := h.waitStatus("web", "settled", settled(5)).Status.UpdateRevision
	log := h.watchPods("web")
	h.modify("web", func(s *appsv1beta1.StatefulSet) {
		setImage(imageV2)(s)
		rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To[int32](2) })(s)
	})
	want := "web-0=v1 web-1=v1 web-2=v2 web-3=v2 web-4=v2"
	h.waitPods("web", want, func(ps []corev1.Pod) bool {
		return readyNames("web-0", "web-1", "web-2", "web-3", "web-4")(ps) && images(ps) == want
	})
	set := h.waitStatus("web", "three updated", func(s appsv1beta1.StatefulSetStatus) bool {
		return s.UpdatedReplicas == 3 && s.ReadyReplicas == 5 && s.CurrentReplicas == 2
	})
	assert.Equal(t, old, set.Status.CurrentRevision, "not every pod is updated: currentRevision stays")
	assert.NotEqual(t, old, set.Status.UpdateRevision)
	testenv.Consistently(t, 2*time.Second, func() error {
		if got := images(h.pods("web")); got != want {
			return fmt.Errorf("partition not honoured: %s", got)
		}
		return nil
	})
	// Highest ordinal first, one at a time, each Ready before the next.
	log.wait(t, "-web-4", "+web-4", "ready web-4", "-web-3", "+web-3", "ready web-3", "-web-2", "+web-2", "ready web-2")

	h.modify("web", rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Partition = ptr.To[int32](0) }))
	set = h.waitStatus("web", "all updated", settled(5))
	assert.Equal(t, set.Status.UpdateRevision, set.Status.CurrentRevision)
	for _, p := range h.pods("web") {
		assert.Equal(t, imageV2, p.Spec.Containers[0].Image, p.Name)
		assert.Equal(t, set.Status.UpdateRevision, p.Labels[pub.ControllerRevisionHashLabelKey], p.Name)
	}
}

// TestParallelRollingUpdateMaxUnavailable: with Parallel, rollingUpdate.
// maxUnavailable pods are updated at once, never more.
func TestParallelRollingUpdateMaxUnavailable(t *testing.T) {
	h := newHarness(t)
	h.startController()
	two := intstr.FromInt32(2)
	h.create(newSet("par", 6, parallel, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.MaxUnavailable = &two })))
	h.waitStatus("par", "settled", settled(6))
	w := h.watchInvariants("par", 6, 2)
	h.modify("par", setImage(imageV2))
	h.waitStatus("par", "all updated", settled(6))
	w.waitCaughtUp(h, "par")
	w.check(t)
	assert.Equal(t, 2, w.maxSeen(), "two pods at a time")
}

// inPlaceReady adds the InPlaceUpdateReady readiness gate in-place updates
// need (as in OpenKruise, the set does not inject it).
func inPlaceReady(set *appsv1beta1.StatefulSet) {
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
}

// TestInPlaceUpdate: with podUpdatePolicy InPlaceIfPossible and the gate in
// the template, an image change keeps every pod (name, UID, node), restarts
// the container and records the in-place state; without the gate,
// InPlaceOnly refuses with a Warning event and a FailedUpdatePod condition.
func TestInPlaceUpdate(t *testing.T) {
	h := newHarness(t)
	h.startController()
	inPlace := rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
		r.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
	})
	h.create(newSet("ip", 3, inPlaceReady, inPlace))
	h.create(newSet("only", 2, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
		r.PodUpdatePolicy = appsv1beta1.InPlaceOnlyPodUpdateStrategyType
	})))
	h.waitStatus("ip", "settled", settled(3))
	h.waitStatus("only", "settled", settled(2))
	before := h.pods("ip")

	h.modify("ip", setImage(imageV2))
	h.modify("only", setImage(imageV2))
	set := h.waitStatus("ip", "updated in place", settled(3))
	after := h.pods("ip")
	assert.Equal(t, uids(before), uids(after), "same pods")
	for i, p := range after {
		assert.Equal(t, imageV2, p.Spec.Containers[0].Image)
		assert.Equal(t, before[i].Spec.NodeName, p.Spec.NodeName)
		assert.Equal(t, set.Status.UpdateRevision, p.Labels[pub.ControllerRevisionHashLabelKey])
		assert.Contains(t, p.Annotations[pub.InPlaceUpdateStateKey], `"revision":"`+set.Status.UpdateRevision+`"`)
		require.NotEmpty(t, p.Status.ContainerStatuses)
		assert.Equal(t, imageV2, p.Status.ContainerStatuses[0].Image, "kwok restarted the container")
		assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].RestartCount)
	}

	only := h.waitStatus("only", "FailedUpdatePod", func(s appsv1beta1.StatefulSetStatus) bool {
		for _, c := range s.Conditions {
			if c.Type == appsv1beta1.FailedUpdatePod && c.Status == corev1.ConditionTrue {
				return strings.Contains(c.Message, "InPlaceOnly")
			}
		}
		return false
	})
	assert.Equal(t, int32(0), only.Status.UpdatedReplicas)
	found := false
	for _, e := range h.events("only") {
		found = found || (e.Reason == "FailedUpdatePodInPlace" && e.Type == corev1.EventTypeWarning)
	}
	assert.True(t, found, "Warning event FailedUpdatePodInPlace")
	for _, p := range h.pods("only") {
		assert.Equal(t, imageV1, p.Spec.Containers[0].Image, "InPlaceOnly never recreates")
	}
}

// TestPausedOnDeleteAndSpecifiedDelete: paused holds the rollout; OnDelete
// updates a pod only when it is deleted; the specified-delete label
// recreates a pod under its name.
func TestPausedOnDeleteAndSpecifiedDelete(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("paused", 2, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Paused = true })))
	h.create(newSet("ondel", 2, func(s *appsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}))
	h.waitStatus("paused", "settled", settled(2))
	h.waitStatus("ondel", "settled", settled(2))
	h.modify("paused", setImage(imageV2))
	h.modify("ondel", setImage(imageV2))
	h.waitStatus("paused", "new revision observed", func(s appsv1beta1.StatefulSetStatus) bool { return s.UpdateRevision != s.CurrentRevision })
	testenv.Consistently(t, 3*time.Second, func() error {
		if got := images(h.pods("paused")) + " " + images(h.pods("ondel")); got != "paused-0=v1 paused-1=v1 ondel-0=v1 ondel-1=v1" {
			return fmt.Errorf("paused/OnDelete pods changed: %s", got)
		}
		return nil
	})

	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "ondel-1", metav1.DeleteOptions{}))
	h.waitPods("ondel", "ondel-1 recreated at v2", func(ps []corev1.Pod) bool {
		return readyNames("ondel-0", "ondel-1")(ps) && images(ps) == "ondel-0=v1 ondel-1=v2"
	})

	old := h.pods("ondel")[0].UID
	h.patchPod("ondel-0", `{"metadata":{"labels":{"`+pub.SpecifiedDeleteKey+`":"true"}}}`)
	pods := h.waitPods("ondel", "ondel-0 recreated", func(ps []corev1.Pod) bool {
		return readyNames("ondel-0", "ondel-1")(ps) && ps[0].UID != old
	})
	assert.NotContains(t, pods[0].Labels, pub.SpecifiedDeleteKey)
	assert.Equal(t, imageV2, pods[0].Spec.Containers[0].Image, "recreated at the update revision")

	h.modify("paused", rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.Paused = false }))
	h.waitStatus("paused", "resumed and updated", settled(2))
}

// TestMinReadySecondsAndRollback: OrderedReady waits minReadySeconds after a
// pod is Ready before the next one; going back to an earlier template reuses
// its revision (re-numbered) instead of creating a twin.
func TestMinReadySecondsAndRollback(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("mr", 2, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) { r.MinReadySeconds = ptr.To[int32](3) })))
	pods := h.waitPods("mr", "both ready", readyNames("mr-0", "mr-1"))
	var readyAt time.Time
	for _, c := range pods[0].Status.Conditions {
		if c.Type == corev1.PodReady {
			readyAt = c.LastTransitionTime.Time
		}
	}
	// Timestamps have one-second resolution: 3 s can show as 2.
	assert.GreaterOrEqual(t, pods[1].CreationTimestamp.Sub(readyAt), 2*time.Second, "mr-1 waited for mr-0 to be available")
	first := h.waitStatus("mr", "settled", settled(2)).Status.UpdateRevision

	h.modify("mr", setImage(imageV2))
	second := h.waitStatus("mr", "on v2", settled(2)).Status.UpdateRevision
	require.NotEqual(t, first, second)
	h.modify("mr", setImage(imageV1))
	back := h.waitStatus("mr", "back on v1", settled(2))
	assert.Equal(t, first, back.Status.UpdateRevision, "the v1 revision is reused")
	assert.Equal(t, int64(3), revisionNumber(h, first), "and re-numbered after v2")
	for _, p := range h.pods("mr") {
		assert.Equal(t, first, p.Labels[pub.ControllerRevisionHashLabelKey])
		assert.Equal(t, imageV1, p.Spec.Containers[0].Image)
	}
}

// TestUnorderedUpdatePriority: with Parallel and unorderedUpdate, pods are
// updated by priority instead of by descending ordinal, and no more than
// replicas − partition of them.
func TestUnorderedUpdatePriority(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("uo", 4, parallel, rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
		r.Partition = ptr.To[int32](2)
		r.UnorderedUpdate = &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
			WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "first"}}}},
		}}
	})))
	h.waitStatus("uo", "settled", settled(4))
	h.patchPod("uo-1", `{"metadata":{"labels":{"tier":"first"}}}`)
	log := h.watchPods("uo")
	h.modify("uo", setImage(imageV2))
	h.waitStatus("uo", "two updated", func(s appsv1beta1.StatefulSetStatus) bool { return s.UpdatedReplicas == 2 && s.ReadyReplicas == 4 })
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return len(deletions(log.get())) > 0, nil })
	assert.Equal(t, "-uo-1", deletions(log.get())[0], "the prioritised pod goes first, not the highest ordinal")
	for _, p := range h.pods("uo") {
		if p.Name == "uo-1" {
			assert.Equal(t, imageV2, p.Spec.Containers[0].Image, "the prioritised pod is among the updated")
		}
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		if n := onImage(imageV2)(h.pods("uo")); n != 2 {
			return fmt.Errorf("%d pods on v2, want replicas - partition = 2", n)
		}
		return nil
	})
}
