package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync: the informers' indexers are seeded by hand (never started), sync runs
// against fake clientsets on a fake clock, and the tests assert on the writes the clientsets recorded. The
// request is testCRR's (ns/r, created at t0), the pod testPod's (ns/p, uid-1 on node-1).

var crrKey = types.NamespacedName{Namespace: "ns", Name: "r"}

type crrFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

// podWhere says where the fixture puts the request's pod.
type podWhere int

const (
	podNowhere   podWhere = iota // deleted
	podCached                    // on the API server and in the cache (a bound pod)
	podInAPIOnly                 // on the API server, not yet (or never: unbound) in the cache
)

// newCRRFixture builds the controller through New over fake clientsets holding crr and pod, caches crr and,
// when cached, pod as the slimming pod informer would store it, and sets the clock at t0+at.
func newCRRFixture(t *testing.T, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod, where podWhere, at time.Duration) *crrFixture {
	t.Helper()
	objs := []runtime.Object{crr}
	if where != podNowhere {
		// As the API server serves it: with the defaults it sets on every pod (without them the informer's
		// transform takes the pod for one it already slimmed and keeps it whole).
		pod = pod.DeepCopy()
		pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, pod.Spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
		objs = append(objs, pod)
	}
	f := &crrFixture{Fakes: wiringtest.New(t, t0.Add(at), objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Cache(crr)
	if where == podCached {
		slim, err := slimPod(pod.DeepCopy())
		require.NoError(t, err)
		// The factory hands back the reconciler's own (filtered, slimming) pod informer.
		f.Cache(slim.(*corev1.Pod))
	}
	return f
}

func (f *crrFixture) sync() {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.sync(context.Background(), crrKey))
}

// updated is the request the one update (of subresource sub) sync sent carried.
func (f *crrFixture) updated(sub string) *appsv1alpha1.ContainerRecreateRequest {
	f.t.Helper()
	var got []*appsv1alpha1.ContainerRecreateRequest
	for _, a := range f.Client.Actions() {
		if a.Matches("update", "containerrecreaterequests") && a.GetSubresource() == sub {
			got = append(got, a.(clienttesting.UpdateAction).GetObject().(*appsv1alpha1.ContainerRecreateRequest))
		}
	}
	require.Len(f.t, got, 1, "updates of %q", sub)
	return got[0]
}

// patch is the body of the one merge patch sync sent to the request.
func (f *crrFixture) patch() map[string]any {
	f.t.Helper()
	var got []map[string]any
	for _, a := range f.Client.Actions() {
		if a.Matches("patch", "containerrecreaterequests") {
			p := a.(clienttesting.PatchAction)
			require.Equal(f.t, types.MergePatchType, p.GetPatchType())
			var body map[string]any
			require.NoError(f.t, json.Unmarshal(p.GetPatch(), &body))
			got = append(got, body)
		}
	}
	require.Len(f.t, got, 1, "patches")
	return got[0]
}

// requeuedAfter checks that sync asked to look at the request again d from now, not before.
func (f *crrFixture) requeuedAfter(d time.Duration) {
	f.t.Helper()
	assert.Equal(f.t, 0, f.c.Queue.Len(), "not due yet")
	f.Clock.Step(d - time.Second)
	assert.Equal(f.t, 0, f.c.Queue.Len(), "not due a second before")
	f.Clock.Step(time.Second)
	require.Eventually(f.t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the request is queued again after %s", d)
}

// accepted is testCRR's request as the controller stamped it on testPod (labels written by hand).
func accepted(phase appsv1alpha1.ContainerRecreateRequestPhase, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	crr := testCRR(containers...)
	crr.UID, crr.ResourceVersion = "crr-uid", "7"
	crr.Labels = map[string]string{
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   "uid-1",
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-1",
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}
	crr.Status.Phase = phase
	return crr
}

// A new request is accepted with one update: the pod's UID and node and the active flag in labels, each
// container's preStop and current ID, the pod's grace period. A pod not in the cache yet is read from the API
// server rather than failing the request.
func TestSyncStampsNewRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where podWhere
	}{
		{"pod cached", podCached},
		{"pod not cached yet", podInAPIOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crr := testCRR("app", "web")
			crr.ResourceVersion = "7"
			f := newCRRFixture(t, crr, testPod(), tc.where, time.Second)
			f.sync()
			assert.Equal(t, []string{"update containerrecreaterequests r"}, f.Writes(), "no status write, no completion")
			out := f.updated("")
			assert.Equal(t, map[string]string{
				appsv1alpha1.ContainerRecreateRequestPodUIDKey:   "uid-1",
				appsv1alpha1.ContainerRecreateRequestNodeNameKey: "node-1",
				appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
			}, out.Labels)
			assert.Equal(t, "7", out.ResourceVersion, "a stale request fails the update")
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailurePolicyFail, out.Spec.Strategy.FailurePolicy)
			assert.Equal(t, ptr.To[int64](20), out.Spec.Strategy.TerminationGracePeriodSeconds)
			require.Len(t, out.Spec.Containers, 2)
			app, web := out.Spec.Containers[0], out.Spec.Containers[1]
			assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a1", RestartCount: 2}, app.StatusContext)
			require.NotNil(t, app.PreStop)
			assert.Equal(t, []string{"sh", "-c", "echo bye"}, app.PreStop.Exec.Command)
			assert.Equal(t, "containerd://w1", web.StatusContext.ContainerID)
			assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}, web.Ports, "the ports its httpGet preStop names")
			assert.Empty(t, f.Events())
		})
	}
}

// The cache may trail the API server: a request created as soon as its pod started finds the cached pod without
// container IDs (or not cached at all once accepted). sync confirms such a refusal on the live pod and stamps the
// request, or keeps it running, instead of ending it for what the cache alone said.
func TestSyncConfirmsRefusalOnLivePod(t *testing.T) {
	t.Run("cached before its containers started", func(t *testing.T) {
		crr := testCRR("app")
		crr.ResourceVersion = "7"
		f := newCRRFixture(t, crr, testPod(), podCached, time.Second)
		stale := testPod()
		stale.Spec.RestartPolicy, stale.Spec.DNSPolicy, stale.Spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
		stale.Status.ContainerStatuses[0].ContainerID = ""
		slim, err := slimPod(stale)
		require.NoError(t, err)
		f.Cache(slim.(*corev1.Pod))
		f.sync()
		assert.Equal(t, []string{"update containerrecreaterequests r"}, f.Writes(), "stamped, not completed")
		assert.Equal(t, "containerd://a1", f.updated("").Spec.Containers[0].StatusContext.ContainerID, "the live pod's container")
	})
	t.Run("accepted, its pod not cached yet", func(t *testing.T) {
		f := newCRRFixture(t, accepted(appsv1alpha1.ContainerRecreateRequestRecreating, "app"), testPod(), podInAPIOnly, 2*time.Second)
		f.sync()
		for _, w := range f.Writes() {
			assert.NotEqual(t, "update containerrecreaterequests/status r", w, "not completed as gone")
		}
	})
	t.Run("gone on the API server too", func(t *testing.T) {
		f := newCRRFixture(t, accepted(appsv1alpha1.ContainerRecreateRequestRecreating, "app"), testPod(), podCached, 2*time.Second)
		require.NoError(t, f.Kube.CoreV1().Pods("ns").Delete(context.Background(), "p", metav1.DeleteOptions{}))
		f.Uncache(testPod())
		f.sync()
		assert.Equal(t, msgPodGone, f.updated("status").Status.Message)
	})
}

// A request that cannot be carried out completes at once, with one status write (phase Completed, the
// completion time from the clock, a message naming what is missing) and a Completed event.
func TestSyncCompletesRequestItCannotCarryOut(t *testing.T) {
	unbound := testPod()
	unbound.Spec.NodeName = ""
	recreated := testPod()
	recreated.UID = "uid-2"
	for _, tc := range []struct {
		name  string
		crr   *appsv1alpha1.ContainerRecreateRequest
		pod   *corev1.Pod
		where podWhere
		want  string
	}{
		{"missing pod", testCRR("app"), nil, podNowhere, "no found Pod named p"},
		{"unknown container", testCRR("app", "nope"), testPod(), podCached, "container nope not found in Pod"},
		{"pod on no node", testCRR("app"), unbound, podInAPIOnly, msgPendingPod},
		{"accepted, then its pod recreated under the name", accepted(appsv1alpha1.ContainerRecreateRequestRecreating, "app"),
			recreated, podCached, msgPodGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCRRFixture(t, tc.crr, tc.pod, tc.where, 2*time.Second)
			f.sync()
			assert.Equal(t, []string{"update containerrecreaterequests/status r"}, f.Writes())
			out := f.updated("status")
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, out.Status.Phase)
			require.NotNil(t, out.Status.CompletionTime)
			assert.Equal(t, t0.Add(2*time.Second), out.Status.CompletionTime.Time)
			assert.Equal(t, tc.want, out.Status.Message)
			assert.Equal(t, []string{"Normal Completed ContainerRecreateRequest completed: " + tc.want}, f.Events())
		})
	}
}

// An accepted request runs until its next deadline: before it sync writes nothing and asks to look again when
// it falls due; at it the request completes. The agent has a minute to take the request up (phase set);
// activeDeadlineSeconds counts from the request's creation.
func TestSyncDeadlines(t *testing.T) {
	rec := appsv1alpha1.ContainerRecreateRequestRecreating
	for _, tc := range []struct {
		name     string
		phase    appsv1alpha1.ContainerRecreateRequestPhase
		deadline *int64
		at, left time.Duration
		want     string
	}{
		{"the agent never answers", "", nil, 15 * time.Second, 45 * time.Second, msgNoResponse},
		{"activeDeadlineSeconds", rec, ptr.To[int64](30), 10 * time.Second, 20 * time.Second, msgDeadline},
		{"activeDeadlineSeconds before the agent's minute", "", ptr.To[int64](20), 5 * time.Second, 15 * time.Second, msgDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crr := accepted(tc.phase, "app")
			crr.Spec.ActiveDeadlineSeconds = tc.deadline
			// The statuses as synced so far: none of the pod's containers started after the request.
			crr.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: "[]"}
			f := newCRRFixture(t, crr, testPod(), podCached, tc.at)
			f.sync()
			assert.Empty(t, f.Writes(), "running, nothing changed")
			f.requeuedAfter(tc.left)

			f.sync()
			assert.Equal(t, []string{"update containerrecreaterequests/status r"}, f.Writes())
			out := f.updated("status")
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, out.Status.Phase)
			assert.Equal(t, tc.want, out.Status.Message)
			require.NotNil(t, out.Status.CompletionTime)
			assert.Equal(t, t0.Add(tc.at+tc.left), out.Status.CompletionTime.Time)
		})
	}
}

// While the agent recreates, the pod's view of each requested container started after the request is
// merge-patched into the annotation the agent reads; when the annotation already says so, nothing is written.
func TestSyncRecreatingCopiesPodStatuses(t *testing.T) {
	pod := testPod()
	// app restarted after the request was created (t0); web has been running since before it.
	pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", ContainerID: "containerd://a2", RestartCount: 3, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(5 * time.Second))}}}
	pod.Status.ContainerStatuses[1].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Hour))}
	const synced = `[{"name":"app","ready":true,"restartCount":3,"containerID":"containerd://a2"}]`
	for _, tc := range []struct {
		name       string
		annotation string
		wantPatch  bool
	}{
		{"statuses changed", `[]`, true},
		{"statuses as synced", synced, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crr := accepted(appsv1alpha1.ContainerRecreateRequestRecreating, "app", "web")
			crr.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: tc.annotation}
			f := newCRRFixture(t, crr, pod, podCached, 10*time.Second)
			f.sync()
			if !tc.wantPatch {
				assert.Empty(t, f.Writes())
				return
			}
			assert.Equal(t, []string{"patch containerrecreaterequests r"}, f.Writes())
			assert.Equal(t, map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				appsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: synced,
			}}}, f.patch())
		})
	}
}

// A completed request: the active label goes first (agents stop watching it), then ttlSecondsAfterFinished
// after completion it is deleted (UID precondition), sync asking to look again when the TTL ends; without a
// TTL it stays.
func TestSyncTTLAfterFinished(t *testing.T) {
	completed := func(ttl *int32, active bool) *appsv1alpha1.ContainerRecreateRequest {
		crr := accepted(appsv1alpha1.ContainerRecreateRequestCompleted, "app")
		crr.Status.CompletionTime = &metav1.Time{Time: t0.Add(10 * time.Second)}
		crr.Spec.TTLSecondsAfterFinished = ttl
		if !active {
			delete(crr.Labels, appsv1alpha1.ContainerRecreateRequestActiveKey)
		}
		return crr
	}

	t.Run("active label dropped first", func(t *testing.T) {
		f := newCRRFixture(t, completed(ptr.To[int32](60), true), testPod(), podCached, time.Hour)
		f.sync()
		assert.Equal(t, []string{"patch containerrecreaterequests r"}, f.Writes(), "not deleted while still active, TTL or not")
		assert.Equal(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{
			appsv1alpha1.ContainerRecreateRequestActiveKey: nil,
		}}}, f.patch())
	})

	t.Run("deleted when the TTL ends", func(t *testing.T) {
		f := newCRRFixture(t, completed(ptr.To[int32](60), false), testPod(), podCached, 30*time.Second)
		f.sync()
		assert.Empty(t, f.Writes(), "40s of the TTL left")
		f.requeuedAfter(40 * time.Second)
		f.sync()
		assert.Equal(t, []string{"delete containerrecreaterequests r"}, f.Writes())
		var opts metav1.DeleteOptions
		for _, a := range f.Client.Actions() {
			if a.Matches("delete", "containerrecreaterequests") {
				opts = a.(clienttesting.DeleteAction).GetDeleteOptions()
			}
		}
		require.NotNil(t, opts.Preconditions)
		assert.Equal(t, types.UID("crr-uid"), *opts.Preconditions.UID, "a request re-created under the name is not deleted")
	})

	t.Run("no TTL", func(t *testing.T) {
		f := newCRRFixture(t, completed(nil, false), testPod(), podCached, time.Hour)
		f.sync()
		assert.Empty(t, f.Writes())
		assert.Equal(t, 0, f.c.Queue.Len())
	})
}
