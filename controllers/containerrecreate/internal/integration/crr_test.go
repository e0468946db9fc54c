package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// A new request is stamped for the agent: labels, preStop, container IDs, the pod's grace period; the CRD
// admits these system-populated fields once and then keeps the spec immutable.
func TestRequestIsStampedForTheAgent(t *testing.T) {
	h := newHarness(t)
	h.startController()
	pod := h.runningPod("p")
	h.crrs.Create(crr("r", "p", "app", "sidecar"))
	got := h.crrs.WaitFor("r", "stamped", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey] != ""
	})
	assert.Equal(t, string(pod.UID), got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey])
	assert.Equal(t, h.node, got.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey])
	assert.Equal(t, "true", got.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey])
	assert.Equal(t, int64(7), *got.Spec.Strategy.TerminationGracePeriodSeconds)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, got.Spec.Strategy.FailurePolicy)
	require.NotNil(t, got.Spec.Containers[0].PreStop)
	assert.Equal(t, []string{"sh", "-c", "echo bye"}, got.Spec.Containers[0].PreStop.Exec.Command)
	assert.Nil(t, got.Spec.Containers[1].PreStop)
	for i, c := range got.Spec.Containers {
		assert.Equal(t, pod.Status.ContainerStatuses[i].ContainerID, c.StatusContext.ContainerID, c.Name)
	}

	_, err := h.Client.AppsV1alpha1().ContainerRecreateRequests(h.NS).Update(context.Background(), func() *appsv1alpha1.ContainerRecreateRequest {
		c := got.DeepCopy()
		c.Spec.Containers[0].StatusContext.ContainerID = "containerd://other"
		return c
	}(), metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec of ContainerRecreateRequest is immutable")

	// While Recreating, the pod's statuses are copied for the agent: those of containers started after the
	// request (at the API's one-second precision: kwok may have started them in the same second).
	h.setPhase("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	synced := h.crrs.WaitFor("r", "container statuses synced", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey] != ""
	})
	var statuses []appsv1alpha1.ContainerRecreateRequestSyncContainerStatus
	require.NoError(t, json.Unmarshal([]byte(synced.Annotations[appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]), &statuses))
	for _, s := range statuses {
		i := map[string]int{"app": 0, "sidecar": 1}[s.Name]
		assert.Equal(t, pod.Status.ContainerStatuses[i].ContainerID, s.ContainerID, s.Name)
		assert.True(t, s.Ready, s.Name)
	}
}

// Requests that cannot be carried out complete with OpenKruise's message naming what is wrong.
func TestUnfulfillableRequestsComplete(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.runningPod("p")
	h.pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"crr-test.flotilla.dev/no-such-node": "x"},
			Containers:   []corev1.Container{{Name: "app", Image: "busybox"}},
		},
	})
	h.crrs.Create(crr("no-pod", "missing", "app"))
	h.crrs.Create(crr("no-container", "p", "app", "nope"))
	h.crrs.Create(crr("pending", "nowhere", "app"))
	h.waitCompleted("no-pod", "no found Pod named missing")
	h.waitCompleted("no-container", "container nope not found in Pod")
	h.waitCompleted("pending", "not allowed to recreate containers in a pending Pod")
	for _, name := range []string{"no-pod", "no-container", "pending"} {
		assert.NotContains(t, h.crrs.Get(name).Labels, appsv1alpha1.ContainerRecreateRequestNodeNameKey, "%s: never offered to an agent", name)
	}

	// A pod deleted under an accepted request: the request completes, and its active label goes.
	h.crrs.Create(crr("gone", "p", "app"))
	h.waitStamped("gone")
	h.setPhase("gone", appsv1alpha1.ContainerRecreateRequestRecreating)
	require.NoError(t, h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	h.waitCompleted("gone", "pod has gone")
	h.crrs.WaitFor("gone", "active label dropped", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		_, ok := c.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]
		return !ok
	})
}

// unreadyGracePeriodSeconds: once the agent starts (Recreating), the pod goes NotReady through KruisePodReady
// (finalizer first, then the condition, then the annotation the agent waits for); when the request completes
// the pod is released and the finalizer dropped.
func TestUnreadyGracePeriod(t *testing.T) {
	h := newHarness(t)
	h.unreadyRequest(5)
	assert.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(h.pods.Get("p"), pub.KruisePodReadyConditionType),
		"nothing happens to the pod before the agent starts")

	before := time.Now().Add(-time.Second)
	h.setPhase("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	got := h.crrs.WaitFor("r", "unready acquired", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return c.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] != ""
	})
	assert.Contains(t, got.Finalizers, appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
	at, err := time.Parse(time.RFC3339, got.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
	require.NoError(t, err)
	assert.False(t, at.Before(before.Truncate(time.Second)), "the grace period starts when the pod is made NotReady")
	pod := h.pods.Get("p")
	cond := podCondition(pod, pub.KruisePodReadyConditionType)
	require.NotNil(t, cond)
	assert.Equal(t, corev1.ConditionFalse, cond.Status, "NotReady before anything is stopped")
	assert.Contains(t, cond.Message, `"ContainerRecreateRequest"`)
	assert.Contains(t, cond.Message, h.NS+"/r")
	assert.Equal(t, corev1.ConditionFalse, testenv.ConditionStatus(pod, corev1.PodReady), "Ready recomputed in the same write")

	h.crrs.ModifyStatus("r", func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
		c.Status.CompletionTime = &metav1.Time{Time: time.Now()}
	})
	h.pods.WaitFor("p", "KruisePodReady released", func(p *corev1.Pod) bool {
		return testenv.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionTrue
	})
	h.crrs.WaitFor("r", "finalizer and active label dropped", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		_, active := c.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]
		return len(c.Finalizers) == 0 && !active
	})
}

// A request deleted while it holds the pod NotReady releases the pod before it goes.
func TestDeletedRequestReleasesThePod(t *testing.T) {
	h := newHarness(t)
	h.unreadyRequest(60)
	h.setPhase("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	h.pods.WaitFor("p", "NotReady", func(p *corev1.Pod) bool {
		return testenv.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionFalse
	})
	h.delete("r")
	h.crrs.WaitGone("r")
	assert.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(h.pods.Get("p"), pub.KruisePodReadyConditionType))
}

// activeDeadlineSeconds completes a request still recreating; ttlSecondsAfterFinished then deletes it.
func TestDeadlineThenTTL(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.runningPod("p")
	r := crr("r", "p", "app")
	r.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
	r.Spec.TTLSecondsAfterFinished = ptr.To[int32](2)
	created := h.crrs.Create(r)
	h.waitStamped("r")
	h.setPhase("r", appsv1alpha1.ContainerRecreateRequestRecreating)
	done := h.waitCompleted("r", "recreating has exceeded the activeDeadlineSeconds")
	assert.GreaterOrEqual(t, done.Status.CompletionTime.Sub(created.CreationTimestamp.Time), 2*time.Second,
		"not before the deadline (second precision)")
	h.crrs.WaitGone("r")
	assert.True(t, time.Since(done.Status.CompletionTime.Time) >= time.Second, "not deleted before its TTL")
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
