package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
)

// TestSlimPodReadsTheSame: what the reconciler decides from a cached (slimmed) pod is what it decides from the
// pod the API server serves — stamp, syncedStatuses, expiry, the readiness gate — while what it never reads
// (volumes, env, probes, resources, the containers' states other than running) is dropped.
func TestSlimPodReadsTheSame(t *testing.T) {
	full := testPod()
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	full.Spec.RestartPolicy, full.Spec.DNSPolicy, full.Spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, "default-scheduler"
	full.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	full.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	full.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	full.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1}
	full.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	full.Spec.Containers[2].Ports = []corev1.ContainerPort{{ContainerPort: 9090}} // no preStop: not needed
	full.Status.Conditions = []corev1.PodCondition{{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}}
	full.Status.ContainerStatuses[0].Ready = true
	full.Status.ContainerStatuses[0].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Second))}
	full.Status.ContainerStatuses[1].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Second))}
	full.Status.ContainerStatuses[2].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	crr := testCRR("app", "web", "sidecar")

	obj, err := slimPod(full.DeepCopy())
	require.NoError(t, err)
	slim := obj.(*corev1.Pod)

	wantOut, wantMsg := stamp(crr, full)
	gotOut, gotMsg := stamp(crr, slim)
	assert.Equal(t, wantMsg, gotMsg)
	assert.Equal(t, wantOut, gotOut, "stamped the same")
	assert.Equal(t, syncedStatuses(crr, full), syncedStatuses(crr, slim))
	stamped := wantOut.DeepCopy()
	for _, now := range []time.Time{t0, t0.Add(time.Hour)} {
		wm, wd := expiry(stamped, full, now)
		gm, gd := expiry(stamped, slim, now)
		assert.Equal(t, [2]any{wm, wd}, [2]any{gm, gd}, "expiry at %s", now)
	}
	assert.Equal(t, full.Spec.ReadinessGates, slim.Spec.ReadinessGates)
	assert.Equal(t, full.Status.Conditions, slim.Status.Conditions)

	assert.Nil(t, slim.ManagedFields)
	assert.Empty(t, slim.Spec.Volumes)
	assert.Empty(t, slim.Spec.Containers[0].Env)
	assert.Nil(t, slim.Spec.Containers[0].ReadinessProbe)
	assert.Empty(t, slim.Spec.Containers[0].Resources.Requests)
	assert.Empty(t, slim.Spec.Containers[0].Ports, "ports only for an httpGet preStop")
	assert.Empty(t, slim.Spec.Containers[2].Ports)
	assert.Nil(t, slim.Status.ContainerStatuses[2].State.Waiting)

	again, err := slimPod(slim)
	require.NoError(t, err)
	assert.Equal(t, slim, again, "a pod slimmed twice (watch-list) stays the same")
}
