package broadcastjob

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Integration tests of the behaviours matched to OpenKruise in review item 9: failed pods are not replaced,
// restartLimit counts container restarts (OnFailure), pods leave nodes that no longer fit them, requests must fit
// a node's allocatable, and failurePolicy Pause holds the job in status without writing spec.paused.

// podCountStays fails the test if the job's pod count moves away from want for d.
func (it *itest) podCountStays(job string, want int, d time.Duration) {
	testenv.Consistently(it.T, d, func() error {
		if n := len(it.pods(job)); n != want {
			return fmt.Errorf("%d pods, want %d", n, want)
		}
		return nil
	})
}

// patchNode applies a strategic merge patch to a node (subresource "status" or "").
func (it *itest) patchNode(name, patch string, subresource ...string) {
	_, err := it.Env.Kube.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}, subresource...)
	require.NoError(it.T, err)
}

// A pod that failed is never replaced, whatever restartLimit: under restartPolicy Never restartLimit plays no
// part. Its node counts as failed and the job completes (Continue) once the other node finished.
func TestIntegrationFailedPodIsNotReplaced(t *testing.T) {
	it := newITest(t)
	it.addNodes(2, nil)
	it.startController()
	it.create(it.newJob("noretry", failurePolicy(appsv1alpha1.FailurePolicyTypeContinue, 3)))
	running := it.waitRunning("noretry", 2)
	it.CompletePod(running[0].Name, corev1.PodFailed)
	it.waitStatus("noretry", counters(2, 1, 0, 1))
	it.podCountStays("noretry", 2, 2*time.Second)

	it.CompletePod(running[1].Name, corev1.PodSucceeded)
	job := it.waitStatus("noretry", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
	})
	assert.True(t, counters(2, 0, 1, 1)(job.Status), "%+v", job.Status)
	assert.Len(t, it.pods("noretry"), 2, "one pod per node, the failed one kept")
}

// restartPolicy OnFailure: a running pod whose containers restarted more than restartLimit times counts as failed;
// it is neither stopped nor replaced, and the job (Continue) waits for it. When it then succeeds it counts as
// succeeded. The kubelet's restart count is written here through the pod's status, as kwok does not crash
// containers.
func TestIntegrationRestartLimitCountsContainerRestarts(t *testing.T) {
	it := newITest(t)
	it.addNodes(1, nil)
	it.startController()
	it.create(it.newJob("restarts", failurePolicy(appsv1alpha1.FailurePolicyTypeContinue, 1), func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}))
	pod := it.waitRunning("restarts", 1)[0]
	it.waitStatus("restarts", counters(1, 1, 0, 0))

	setRestarts := func(n int32) {
		testenv.Eventually(t, waitTimeout, func() (bool, error) {
			p, err := it.Env.Kube.CoreV1().Pods(it.NS).Get(context.Background(), pod.Name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, err
			}
			p.Status.ContainerStatuses[0].RestartCount = n
			_, err = it.Env.Kube.CoreV1().Pods(it.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				return false, nil
			}
			return err == nil, err
		})
	}
	setRestarts(1)
	it.podCountStays("restarts", 1, time.Second)
	it.waitStatus("restarts", counters(1, 1, 0, 0)) // within restartLimit 1

	setRestarts(2)
	job := it.waitStatus("restarts", counters(1, 0, 0, 1))
	assert.Equal(t, appsv1alpha1.PhaseRunning, job.Status.Phase, "the job waits for the pod")
	testenv.Consistently(t, 2*time.Second, func() error {
		pods := it.pods("restarts")
		if len(pods) != 1 || pods[0].DeletionTimestamp != nil || pods[0].Spec.ActiveDeadlineSeconds != nil {
			return fmt.Errorf("the pod over its restart limit was replaced, deleted or stopped: %d pods", len(pods))
		}
		return nil
	})

	it.CompletePod(pod.Name, corev1.PodSucceeded)
	job = it.waitStatus("restarts", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
	})
	assert.True(t, counters(1, 0, 1, 0)(job.Status), "%+v", job.Status)
}

// A pod whose node stops fitting it is deleted, bound and running or already succeeded: here one node is tainted,
// one relabelled, one cordoned. The node leaves status.desired; the job completes on the node left.
func TestIntegrationPodsLeaveNodesNoLongerEligible(t *testing.T) {
	it := newITest(t)
	nodes := it.addNodes(4, map[string]string{"role": "bcj"})
	it.startController()
	it.create(it.newJob("leave", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.NodeSelector["role"] = "bcj" }))
	byNode := podsByNode(it.waitRunning("leave", 4))
	it.waitStatus("leave", counters(4, 4, 0, 0))
	succeeded := byNode[nodes[3]][0].Name
	it.CompletePod(succeeded, corev1.PodSucceeded)
	it.waitStatus("leave", counters(4, 3, 1, 0))

	it.patchNode(nodes[0], `{"spec":{"taints":[{"key":"`+ownerTaint+`","value":"`+it.NS+`","effect":"NoSchedule"},{"key":"flotilla.dev/maintenance","effect":"NoSchedule"}]}}`)
	it.patchNode(nodes[1], `{"metadata":{"labels":{"role":"other"}}}`)
	it.patchNode(nodes[3], `{"spec":{"unschedulable":true}}`)
	for _, n := range []string{nodes[0], nodes[1], nodes[3]} {
		it.podAPI.WaitGone(byNode[n][0].Name)
	}
	it.waitStatus("leave", counters(1, 1, 0, 0))
	it.podCountStays("leave", 1, time.Second)

	it.CompletePod(byNode[nodes[2]][0].Name, corev1.PodSucceeded)
	job := it.waitStatus("leave", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
	})
	assert.True(t, counters(1, 0, 1, 0)(job.Status), "%+v", job.Status)
}

// The template's requests must fit a node's allocatable (the node's other pods are not counted): a node that is
// too small gets no pod and is not desired; a node that shrinks under its pod loses the pod.
func TestIntegrationResourceFit(t *testing.T) {
	it := newITest(t)
	nodes := it.addNodes(2, nil)
	it.patchNode(nodes[1], `{"status":{"allocatable":{"cpu":"1"}}}`, "status")
	it.startController()
	it.create(it.newJob("fit", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(10))
	}))
	running := it.waitRunning("fit", 1)
	assert.Equal(t, nodes[0], running[0].Spec.NodeName)
	it.waitStatus("fit", counters(1, 1, 0, 0))
	it.podCountStays("fit", 1, 2*time.Second)

	it.patchNode(nodes[0], `{"status":{"allocatable":{"cpu":"1"}}}`, "status")
	it.podAPI.WaitGone(running[0].Name)
	it.waitStatus("fit", func(s appsv1alpha1.BroadcastJobStatus) bool { return s.Desired == 0 && s.Active == 0 })
}

// failurePolicy Pause, as OpenKruise: a failed pod pauses the job in status.phase only (spec.paused stays false),
// with a Warning event Paused; nothing is created while a failed pod exists. Deleting the failed pod resumes the
// job: its node gets a new pod.
func TestIntegrationPauseHoldsWithoutWritingSpec(t *testing.T) {
	it := newITest(t)
	it.addNodes(2, nil)
	it.startController()
	it.create(it.newJob("pause", failurePolicy(appsv1alpha1.FailurePolicyTypePause, 1), func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	}))
	first := it.waitRunning("pause", 1)[0]
	it.CompletePod(first.Name, corev1.PodFailed)
	job := it.waitStatus("pause", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == appsv1alpha1.PhasePaused && counters(2, 0, 0, 1)(s)
	})
	assert.False(t, job.Spec.Paused, "spec.paused is the user's: not written")
	ev := it.WaitEvent("pause", EventPaused)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	it.podCountStays("pause", 1, 2*time.Second)
	job, err := it.job("pause")
	require.NoError(t, err)
	assert.Equal(t, appsv1alpha1.PhasePaused, job.Status.Phase)
	assert.Empty(t, job.Status.Conditions, "held, not finished")

	require.NoError(t, it.Env.Kube.CoreV1().Pods(it.NS).Delete(context.Background(), first.Name, metav1.DeleteOptions{}))
	it.podAPI.WaitGone(first.Name)
	retry := it.waitRunning("pause", 1)[0]
	assert.Equal(t, first.Spec.NodeName, retry.Spec.NodeName, "the freed node gets a pod again")
	it.waitStatus("pause", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return s.Phase == appsv1alpha1.PhaseRunning && counters(2, 1, 0, 0)(s)
	})
	it.CompletePod(retry.Name, corev1.PodSucceeded)
	it.CompletePod(it.waitRunningExcept("pause", retry.Name).Name, corev1.PodSucceeded)
	job = it.waitStatus("pause", func(s appsv1alpha1.BroadcastJobStatus) bool {
		return hasCondition(s, appsv1alpha1.JobComplete, ReasonCompleted)
	})
	assert.True(t, counters(2, 0, 2, 0)(job.Status), "%+v", job.Status)
}
