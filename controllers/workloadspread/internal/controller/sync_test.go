package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/spread"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync: the informers' indexers are seeded by
// hand (never started), sync runs once against fake clientsets, and the
// test asserts on the writes they recorded.

const wsNS = "ns"

var wsNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type wsFixture struct {
	*wiringtest.Fakes
	t *testing.T
	c *Controller
}

// newWSFixture builds the controller through New over fake clientsets
// holding objs, and puts each of objs in the cache of its kind.
func newWSFixture(t *testing.T, objs ...runtime.Object) *wsFixture {
	t.Helper()
	f := &wsFixture{Fakes: wiringtest.New(t, wsNow, objs...), t: t}
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Cache(objs...)
	return f
}

func (f *wsFixture) sync(name string) {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.sync(context.Background(), types.NamespacedName{Namespace: wsNS, Name: name}))
}

// podWrites are the names of the pods sync sent verb for, in order.
func (f *wsFixture) podWrites(verb string) []string {
	var out []string
	for _, a := range f.Kube.Actions() {
		if a.Matches(verb, "pods") {
			out = append(out, a.(interface{ GetName() string }).GetName())
		}
	}
	return out
}

// statusWritten is the status of the one status update sync sent.
func (f *wsFixture) statusWritten() appsv1alpha1.WorkloadSpreadStatus {
	return wiringtest.OnlyUpdate[*appsv1alpha1.WorkloadSpread](f.Fakes, "workloadspreads", "status").Status
}

// cost is the deletion cost pod carries in the fake API ("" when none).
func (f *wsFixture) cost(pod string) string {
	f.t.Helper()
	p, err := f.Kube.CoreV1().Pods(wsNS).Get(context.Background(), pod, metav1.GetOptions{})
	require.NoError(f.t, err)
	return p.Annotations[spread.DeletionCostKey]
}

var (
	cloneSetRef = metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	stsRef      = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-db", Controller: ptr.To(true)}
)

func cloneSet(replicas int32) *appsv1alpha1.CloneSet {
	return &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: wsNS, Name: "web", UID: "uid-web"},
		Spec: appsv1alpha1.CloneSetSpec{Replicas: ptr.To(replicas)}}
}

func statefulSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: wsNS, Name: "db", UID: "uid-db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
}

func subset(name string, max *intstr.IntOrString) appsv1alpha1.WorkloadSpreadSubset {
	return appsv1alpha1.WorkloadSpreadSubset{Name: name, MaxReplicas: max}
}

// newWS is the WorkloadSpread "ws" spreading the owner of ref.
func newWS(ref metav1.OwnerReference, subsets ...appsv1alpha1.WorkloadSpreadSubset) *appsv1alpha1.WorkloadSpread {
	return &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Namespace: wsNS, Name: "ws", UID: "uid-ws", ResourceVersion: "1", Generation: 1},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name},
			Subsets:         subsets,
		},
	}
}

type wsPodOpt func(*corev1.Pod)

// in puts the pod in subset s of "ws", as the webhook annotates it.
func in(s string) wsPodOpt {
	return func(p *corev1.Pod) {
		p.Annotations[spread.AnnotationKey] = spread.Injected{Name: "ws", Subset: s}.Encode()
	}
}

func withCost(c string) wsPodOpt {
	return func(p *corev1.Pod) { p.Annotations[spread.DeletionCostKey] = c }
}

// unassigned: not scheduled yet (deleted first by kit's deletion order).
func unassigned(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

// unschedulable: the scheduler has reported it cannot place the pod,
// created at created.
func unschedulable(created time.Time) wsPodOpt {
	return func(p *corev1.Pod) {
		unassigned(p)
		p.CreationTimestamp = metav1.NewTime(created)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
}

func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: wsNow}
	p.Finalizers = []string{"test/keep"}
}

// wsPod is a running, ready pod controlled by owner, created an hour ago.
func wsPod(name string, owner metav1.OwnerReference, opts ...wsPodOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: wsNS, Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{},
			CreationTimestamp: metav1.NewTime(wsNow.Add(-time.Hour)), OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Two subsets of a CloneSet of 5 (a: 40% → 2, b: unlimited): sync counts
// each subset's active pods of the workload, patches the deletion costs that
// differ (a's pods within its limit 200, the one beyond it -100, b's 100, a
// pod in no subset -300) and reports the pod created without the webhook.
func TestSyncWritesSubsetStatusAndDeletionCosts(t *testing.T) {
	ws := newWS(cloneSetRef, subset("a", ptr.To(intstr.FromString("40%"))), subset("b", nil))
	ws.Generation = 2
	inScope := metav1.Condition{Type: kitwebhook.InScopeCondition, Status: metav1.ConditionTrue, Reason: "InScope",
		LastTransitionTime: metav1.NewTime(wsNow.Add(-30 * time.Minute))}
	ws.Status.Conditions = []metav1.Condition{inScope}
	otherOwner := cloneSetRef
	otherOwner.Name, otherOwner.UID = "other", "uid-other"
	f := newWSFixture(t, ws, cloneSet(5),
		wsPod("web-0", cloneSetRef, in("a")),
		wsPod("web-1", cloneSetRef, in("a")),
		wsPod("web-2", cloneSetRef, in("a"), unassigned), // beyond a's limit: the first to delete
		wsPod("web-3", cloneSetRef, in("b"), withCost("100")),
		wsPod("web-4", cloneSetRef, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(wsNow.Add(-time.Minute)) }),
		wsPod("web-5", cloneSetRef, in("a"), terminating),
		wsPod("other-0", otherOwner, in("a")), // not the target's
	)
	f.sync("ws")

	assert.ElementsMatch(t, []string{"web-0", "web-1", "web-2", "web-4"}, f.podWrites("patch"), "web-3 has its cost already")
	for pod, want := range map[string]string{"web-0": "200", "web-1": "200", "web-2": "-100", "web-3": "100", "web-4": "-300", "web-5": "", "other-0": ""} {
		assert.Equal(t, want, f.cost(pod), pod)
	}
	st := f.statusWritten()
	assert.Equal(t, int64(2), st.ObservedGeneration)
	assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{
		{Name: "a", Replicas: 3, MissingReplicas: 0},
		{Name: "b", Replicas: 1, MissingReplicas: -1},
	}, st.SubsetStatuses)
	require.NotNil(t, meta.FindStatusCondition(st.Conditions, kitwebhook.InScopeCondition), "WebhookInScope kept")
	placed := meta.FindStatusCondition(st.Conditions, PodsPlacedCondition)
	require.NotNil(t, placed)
	assert.Equal(t, metav1.ConditionFalse, placed.Status)
	assert.Equal(t, "WebhookMissed", placed.Reason)
	assert.Contains(t, placed.Message, "1 pod(s)")
	assert.Contains(t, placed.Message, "web-4")
	ev := f.Events()
	require.Len(t, ev, 1)
	assert.Contains(t, ev[0], "Warning WebhookMissed ")
	assert.Empty(t, f.podWrites("delete"))
	assert.Zero(t, f.c.Queue.Len(), "nothing changes by time alone")
}

// A status write the cache does not show yet: the next sync writes nothing
// (it would write the same status again, and the costs, from stale objects);
// once the cache shows the writes, a sync finds nothing to write.
func TestSyncWaitsForItsOwnWriteThenStaysQuiet(t *testing.T) {
	ws := newWS(cloneSetRef, subset("a", ptr.To(intstr.FromInt32(1))), subset("b", nil))
	pods := []runtime.Object{wsPod("web-0", cloneSetRef, in("a")), wsPod("web-1", cloneSetRef, in("b"))}
	f := newWSFixture(t, append([]runtime.Object{ws, cloneSet(2)}, pods...)...)
	// The fake API keeps the resourceVersion it is sent; the API server would
	// move it on.
	f.BumpResourceVersions()

	f.sync("ws")
	assert.ElementsMatch(t, []string{"patch pods web-0", "patch pods web-1", "update workloadspreads/status ws"}, f.Writes())
	written := f.statusWritten()
	assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Replicas: 1}, {Name: "b", Replicas: 1, MissingReplicas: -1}},
		written.SubsetStatuses)

	f.sync("ws")
	assert.Empty(t, f.Writes(), "the cache is behind the status write: nothing is written again")

	// The informers deliver the writes.
	cur, err := f.Client.AppsV1alpha1().WorkloadSpreads(wsNS).Get(context.Background(), "ws", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, "1", cur.ResourceVersion, "the status write moved newWS's resourceVersion on")
	f.Cache(cur)
	for _, name := range []string{"web-0", "web-1"} {
		p, err := f.Kube.CoreV1().Pods(wsNS).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		f.Cache(p)
	}
	f.sync("ws")
	assert.Empty(t, f.Writes(), "status and costs as computed: nothing to write")
	assert.Empty(t, f.Events())
}

// No WorkloadSpread, or one being deleted: sync writes nothing. A target
// that does not exist: its pods are not counted and the subsets show empty
// counts (missingReplicas at the limit), with no pod written.
func TestSyncGoneDeletingOrNoTarget(t *testing.T) {
	pods := []runtime.Object{wsPod("web-0", cloneSetRef, in("a"), withCost("100")), wsPod("web-1", cloneSetRef, in("a"))}
	withStatus := func(ws *appsv1alpha1.WorkloadSpread) *appsv1alpha1.WorkloadSpread {
		ws.Status = appsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: 1,
			SubsetStatuses: []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Replicas: 2, MissingReplicas: 1}}}
		return ws
	}
	deleting := withStatus(newWS(cloneSetRef, subset("a", ptr.To(intstr.FromInt32(3)))))
	deleting.DeletionTimestamp = &metav1.Time{Time: wsNow}
	deleting.Finalizers = []string{"test/keep"}

	t.Run("no WorkloadSpread", func(t *testing.T) {
		f := newWSFixture(t, append([]runtime.Object{cloneSet(2)}, pods...)...)
		f.sync("ws")
		assert.Empty(t, f.Writes())
	})
	t.Run("being deleted", func(t *testing.T) {
		f := newWSFixture(t, append([]runtime.Object{deleting, cloneSet(2)}, pods...)...)
		f.sync("ws")
		assert.Empty(t, f.Writes())
	})
	t.Run("target gone", func(t *testing.T) {
		f := newWSFixture(t, append([]runtime.Object{withStatus(newWS(cloneSetRef, subset("a", ptr.To(intstr.FromInt32(3)))))}, pods...)...)
		f.sync("ws")
		assert.Equal(t, []string{"update workloadspreads/status ws"}, f.Writes(), "no pod written")
		assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Replicas: 0, MissingReplicas: 3}}, f.statusWritten().SubsetStatuses)
	})
}

// The webhook's entries: a creatingPods entry whose pod is seen is dropped,
// one not seen is kept (and holds a place) for 30s, then dropped with a
// CreatePodFailed event; a deletingPods entry of a live pod frees its place
// for 15s, then is dropped with a DeletePodFailed event. Sync asks to look
// again at the first expiry. A StatefulSet target gets no deletion costs.
func TestSyncExpiresWebhookEntries(t *testing.T) {
	ws := newWS(stsRef, subset("a", ptr.To(intstr.FromInt32(4))))
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(wsNow.Add(-d)) }
	ws.Status = appsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: 1, SubsetStatuses: []appsv1alpha1.WorkloadSpreadSubsetStatus{{
		Name: "a", Replicas: 1, MissingReplicas: 1,
		CreatingPods: map[string]metav1.Time{"db-0": ago(5 * time.Second), "db-8": ago(40 * time.Second), "db-9": ago(10 * time.Second)},
		DeletingPods: map[string]metav1.Time{"db-1": ago(5 * time.Second), "db-2": ago(20 * time.Second)},
	}}}
	f := newWSFixture(t, ws, statefulSet(3),
		wsPod("db-0", stsRef, in("a")), wsPod("db-1", stsRef, in("a")), wsPod("db-2", stsRef, in("a")))
	f.sync("ws")

	assert.Equal(t, []string{"update workloadspreads/status ws"}, f.Writes(), "no deletion cost for a StatefulSet")
	assert.Equal(t, []appsv1alpha1.WorkloadSpreadSubsetStatus{{
		Name: "a", Replicas: 3,
		// 4 - 3 active - db-9 still coming + db-1 on its way out.
		MissingReplicas: 1,
		CreatingPods:    map[string]metav1.Time{"db-9": ago(10 * time.Second)},
		DeletingPods:    map[string]metav1.Time{"db-1": ago(5 * time.Second)},
	}}, f.statusWritten().SubsetStatuses)
	assert.Equal(t, []string{
		"Warning CreatePodFailed Pod ns/db-8 was expected to be created but it wasn't",
		"Warning DeletePodFailed Pod ns/db-2 was expected to be deleted but it wasn't",
	}, f.Events())

	// db-1's entry expires first, 10s from now.
	f.Clock.Step(9 * time.Second)
	assert.Zero(t, f.c.Queue.Len(), "not due before the first expiry")
	f.Clock.Step(2 * time.Second)
	require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"queued again at the first expiry")
}

// Adaptive: a pod of a subset (not the last) left Unschedulable longer than
// rescheduleCriticalSeconds is deleted and the subset turns unschedulable;
// one not stuck that long is waited for; the last subset's pods are never
// rescheduled. Five minutes later the subset is schedulable again.
func TestSyncAdaptiveReschedules(t *testing.T) {
	adaptive := func() *appsv1alpha1.WorkloadSpread {
		ws := newWS(cloneSetRef, subset("a", ptr.To(intstr.FromInt32(3))), subset("b", nil))
		ws.Spec.ScheduleStrategy = appsv1alpha1.WorkloadSpreadScheduleStrategy{Type: appsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
			Adaptive: &appsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: ptr.To[int32](30)}}
		return ws
	}
	t.Run("stuck pod deleted", func(t *testing.T) {
		f := newWSFixture(t, adaptive(), cloneSet(4),
			wsPod("web-0", cloneSetRef, in("a")),
			wsPod("web-1", cloneSetRef, in("a"), unschedulable(wsNow.Add(-time.Minute))),
			wsPod("web-2", cloneSetRef, in("a"), unschedulable(wsNow.Add(-10*time.Second))),
			wsPod("web-3", cloneSetRef, in("b"), unschedulable(wsNow.Add(-time.Minute))),
		)
		f.sync("ws")

		assert.Equal(t, []string{"web-1"}, f.podWrites("delete"))
		st := f.statusWritten().SubsetStatuses
		require.Len(t, st, 2)
		require.Len(t, st[0].Conditions, 1)
		assert.Equal(t, appsv1alpha1.WorkloadSpreadSubsetCondition{Type: appsv1alpha1.SubsetSchedulable, Status: corev1.ConditionFalse,
			Reason: "PodUnschedulable", LastTransitionTime: metav1.NewTime(wsNow)}, st[0].Conditions[0])
		require.Len(t, st[1].Conditions, 1)
		assert.Equal(t, corev1.ConditionTrue, st[1].Conditions[0].Status, "the last subset stays schedulable")
		assert.Empty(t, f.Events())

		// web-2 is stuck 30s after its creation: 20s from now.
		f.Clock.Step(19 * time.Second)
		assert.Zero(t, f.c.Queue.Len())
		f.Clock.Step(2 * time.Second)
		require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
			"queued again when web-2 is due")
	})
	t.Run("recovers after five minutes", func(t *testing.T) {
		ws := adaptive()
		ws.Status = appsv1alpha1.WorkloadSpreadStatus{ObservedGeneration: 1, SubsetStatuses: []appsv1alpha1.WorkloadSpreadSubsetStatus{
			{Name: "a", Replicas: 1, MissingReplicas: 2, Conditions: []appsv1alpha1.WorkloadSpreadSubsetCondition{{Type: appsv1alpha1.SubsetSchedulable,
				Status: corev1.ConditionFalse, Reason: "PodUnschedulable", LastTransitionTime: metav1.NewTime(wsNow.Add(-spread.MaxScheduledFailedDuration))}}},
			{Name: "b", MissingReplicas: -1, Conditions: []appsv1alpha1.WorkloadSpreadSubsetCondition{{Type: appsv1alpha1.SubsetSchedulable,
				Status: corev1.ConditionTrue, Reason: "Sufficient", LastTransitionTime: metav1.NewTime(wsNow.Add(-time.Hour))}}},
		}}
		f := newWSFixture(t, ws, cloneSet(1), wsPod("web-0", cloneSetRef, in("a"), withCost("200")))
		f.sync("ws")

		assert.Empty(t, f.podWrites("delete"))
		st := f.statusWritten().SubsetStatuses
		require.Len(t, st[0].Conditions, 1)
		assert.Equal(t, appsv1alpha1.WorkloadSpreadSubsetCondition{Type: appsv1alpha1.SubsetSchedulable, Status: corev1.ConditionTrue,
			Reason: "Sufficient", LastTransitionTime: metav1.NewTime(wsNow)}, st[0].Conditions[0])
		assert.Equal(t, []string{"Normal RecoverSchedulable Subset a of WorkloadSpread ns/ws is recovered from unschedulable to schedulable"}, f.Events())
	})
}
