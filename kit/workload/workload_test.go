package workload

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/expectations"
	"github.com/flotilla-dev/flotilla/kit/podcontrol"
)

var (
	ownerKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	owner     = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}}
	key       = types.NamespacedName{Namespace: "ns", Name: "web"}
	t0        = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// newBase builds a Base over a fake clientset holding objs, its informers
// started and synced.
func newBase(t *testing.T, spec Spec, objs ...any) (*Base, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	kube := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	f := informers.NewSharedInformerFactory(kube, 0)
	if spec.Name == "" {
		spec.Name = "test"
	}
	spec.Owner = controller.OwnerKind{Group: "apps", Kind: "ReplicaSet"}
	b, err := New(Deps{Kube: kube, KubeInformers: f, Clock: clk, Recorder: record.NewFakeRecorder(10), QueueOptions: controller.DefaultQueueOptions()},
		spec, func(context.Context, types.NamespacedName) error { return nil })
	require.NoError(t, err)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			_, err = kube.CoreV1().Pods(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
		case *appsv1.ControllerRevision:
			_, err = kube.AppsV1().ControllerRevisions(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
		}
		require.NoError(t, err)
	}
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	t.Cleanup(b.Queue.ShutDown)
	return b, kube, clk
}

func pod(name string, labels map[string]string, ref *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: labels}}
	if ref != nil {
		p.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return p
}

func TestSlimPodKeeps(t *testing.T) {
	full := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure, NodeName: "n1",
				Volumes:      []corev1.Volume{{Name: "v"}},
				NodeSelector: map[string]string{"zone": "a"},
				Tolerations:  []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				InitContainers: []corev1.Container{{Name: "i", Image: "img", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
				Affinity: &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}},
					}},
					PodAntiAffinity: &corev1.PodAntiAffinity{},
				},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 3, Image: "img"}}},
		}
	}
	for _, tc := range []struct {
		name string
		keep Keep
		want func(*testing.T, *corev1.Pod)
	}{
		{"nothing more than SlimPod", nil, func(t *testing.T, p *corev1.Pod) {
			assert.Nil(t, p.Spec.Affinity)
			assert.Empty(t, p.Spec.RestartPolicy)
			assert.Nil(t, p.Status.InitContainerStatuses)
		}},
		{"pinned node", KeepPinnedNode, func(t *testing.T, p *corev1.Pod) {
			require.NotNil(t, p.Spec.Affinity)
			assert.Nil(t, p.Spec.Affinity.PodAntiAffinity, "only the required node affinity")
			assert.Equal(t, "n1", p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0])
			assert.Nil(t, p.Spec.Volumes)
		}},
		{"restarts", KeepRestarts, func(t *testing.T, p *corev1.Pod) {
			assert.Equal(t, corev1.RestartPolicyOnFailure, p.Spec.RestartPolicy)
			assert.Equal(t, []corev1.ContainerStatus{{Name: "init", RestartCount: 3}}, p.Status.InitContainerStatuses)
			assert.Nil(t, p.Spec.Affinity)
		}},
		{"scheduling", KeepScheduling, func(t *testing.T, p *corev1.Pod) {
			require.NotNil(t, p.Spec.Affinity)
			assert.NotNil(t, p.Spec.Affinity.PodAntiAffinity, "the whole affinity")
			assert.Equal(t, []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists}}, p.Spec.Tolerations)
			assert.Equal(t, map[string]string{"zone": "a"}, p.Spec.NodeSelector)
			assert.Equal(t, resource.MustParse("1"), p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU])
			require.Len(t, p.Spec.InitContainers, 1)
			assert.Equal(t, resource.MustParse("2"), p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU])
			assert.Empty(t, p.Spec.InitContainers[0].Image, "only what fitting reads")
			assert.Nil(t, p.Spec.Volumes)
		}},
		{"both", Keeps(KeepPinnedNode, KeepRestarts), func(t *testing.T, p *corev1.Pod) {
			assert.NotNil(t, p.Spec.Affinity)
			assert.Equal(t, corev1.RestartPolicyOnFailure, p.Spec.RestartPolicy)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := SlimPod(tc.keep)(full())
			require.NoError(t, err)
			p := out.(*corev1.Pod)
			assert.Nil(t, p.ManagedFields)
			assert.Equal(t, "n1", p.Spec.NodeName)
			assert.Equal(t, corev1.PodRunning, p.Status.Phase)
			tc.want(t, p)
			again, err := SlimPod(tc.keep)(p) // client-go may transform twice
			require.NoError(t, err)
			tc.want(t, again.(*corev1.Pod))
		})
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	out, err := SlimPod(KeepRestarts)(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out, "anything but a pod passes through")
}

func TestGet(t *testing.T) {
	b := &Base{Spec: Spec{Owner: controller.OwnerKind{Kind: "ReplicaSet"}}}
	var forgotten []types.NamespacedName
	forget := func(k types.NamespacedName) { forgotten = append(forgotten, k) }
	notFound := func(string) (*appsv1.ReplicaSet, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "replicasets"}, "web")
	}
	_, ok, err := Get(b, key, notFound, forget)
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, []types.NamespacedName{key}, forgotten, "gone: forgotten")

	_, ok, err = Get(b, key, func(string) (*appsv1.ReplicaSet, error) { return nil, errors.New("boom") }, forget)
	assert.False(t, ok)
	assert.ErrorContains(t, err, "get ReplicaSet ns/web: boom")
	assert.Len(t, forgotten, 1, "an error forgets nothing")

	got, ok, err := Get(b, key, func(string) (*appsv1.ReplicaSet, error) { return owner, nil }, forget)
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Same(t, owner, got)
}

func TestScaleInFlight(t *testing.T) {
	b, _, clk := newBase(t, Spec{})
	exp := b.Scale()
	assert.False(t, b.ScaleInFlight(t.Context(), key, exp), "nothing expected")
	exp.Expect(key, expectations.Create, "p1")
	assert.True(t, b.ScaleInFlight(t.Context(), key, exp), "a creation not yet observed")
	clk.Step(exp.Timeout() + time.Second)
	assert.False(t, b.ScaleInFlight(t.Context(), key, exp), "timed out: act on the cache")
}

func TestOwnWritesPending(t *testing.T) {
	b, _, _ := newBase(t, Spec{})
	p := pod("p1", nil, nil)
	p.ResourceVersion = "5"
	assert.False(t, b.OwnWritesPending(t.Context(), key, slices.Values([]*corev1.Pod{p})))
	written := p.DeepCopy()
	written.ResourceVersion = "7"
	b.RV.Expect(written)
	assert.True(t, b.OwnWritesPending(t.Context(), key, slices.Values([]*corev1.Pod{p})), "the cache shows rv 5, we wrote 7")
	p.ResourceVersion = "7"
	assert.False(t, b.OwnWritesPending(t.Context(), key, slices.Values([]*corev1.Pod{p})))
}

func TestFinish(t *testing.T) {
	b, _, _ := newBase(t, Spec{})
	var r controller.Requeue
	r.After(time.Minute)
	transient := errors.New("conflict")
	assert.Equal(t, transient, b.Finish(key, transient, &r), "retryable: returned for a retry")
	permanent := controller.Permanent(errors.New("invalid"))
	assert.Equal(t, permanent, b.Finish(key, permanent, &r), "permanent: returned to be logged")
	assert.NoError(t, b.Finish(key, nil, &r))
}

func TestOwnedPodsAndRevisionCache(t *testing.T) {
	ref := metav1.NewControllerRef(owner, ownerKind)
	b, _, _ := newBase(t, Spec{PodLabel: "app", Revisions: true},
		pod("mine", map[string]string{"app": "web"}, ref),
		pod("orphan", map[string]string{"app": "web"}, nil),
		pod("unlabelled", nil, ref), // not listed: the informer selects by label
	)
	pods, err := b.OwnedPods(owner)
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.Equal(t, "mine", pods[0].Name)
	assert.Nil(t, pods[0].ManagedFields)
	assert.Len(t, b.Synced(), 2, "pods and revisions")
}

func TestSyncRevisionsAndTruncate(t *testing.T) {
	b, kube, _ := newBase(t, Spec{Revisions: true})
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v1"}}}}
	req := RevisionRequest{Owner: owner, Kind: ownerKind, Template: tmpl, HashLabel: true, Annotations: map[string]string{"a": ""}}
	r, err := b.SyncRevisions(t.Context(), req)
	require.NoError(t, err)
	require.NotNil(t, r.Update)
	assert.Same(t, r.Update, r.Current, "no current revision in status: the update one")
	assert.Equal(t, r.Update.Labels["controller.kubernetes.io/hash"], r.Update.Labels[pub.ControllerRevisionHashLabelKey], "HashLabel")
	assert.Contains(t, r.Update.Annotations, "a")
	list, err := kube.AppsV1().ControllerRevisions("ns").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)

	// Truncation keeps update, current and what pods run.
	old := func(name string, n int64) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Revision: n}
	}
	for _, name := range []string{"r1", "r2", "r3"} {
		_, err := kube.AppsV1().ControllerRevisions("ns").Create(t.Context(), old(name, 0), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	hist := Revisions{History: []*appsv1.ControllerRevision{old("r1", 1), old("r2", 2), old("r3", 3), r.Update}, Current: old("r2", 2), Update: r.Update}
	running := pod("p", map[string]string{pub.ControllerRevisionHashLabelKey: "r3"}, nil)
	require.NoError(t, b.TruncateHistory(t.Context(), hist, new(int32), slices.Values([]*corev1.Pod{running})))
	list, err = kube.AppsV1().ControllerRevisions("ns").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	assert.ElementsMatch(t, []string{"r2", "r3", r.Update.Name}, names, "r1 is neither live nor within the limit")
}

func TestWriteStatus(t *testing.T) {
	counters := func(cur, next int) bool { return cur/100 == next/100 } // same hundred: counters only
	for _, tc := range []struct {
		name       string
		interval   time.Duration
		wroteAgo   time.Duration // last write; 0: none
		cur, next  int
		wantWrite  bool
		wantWakeUp bool
	}{
		{name: "unchanged", cur: 1, next: 1},
		{name: "changed", cur: 1, next: 2, wantWrite: true},
		{name: "counters, paced, first write", interval: time.Second, cur: 1, next: 2, wantWrite: true},
		{name: "counters, paced, just written", interval: time.Second, wroteAgo: time.Millisecond, cur: 1, next: 2, wantWakeUp: true},
		{name: "counters, paced, written long ago", interval: time.Second, wroteAgo: time.Minute, cur: 1, next: 2, wantWrite: true},
		{name: "more than counters, just written", interval: time.Second, wroteAgo: time.Millisecond, cur: 1, next: 200, wantWrite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _ := newBase(t, Spec{StatusInterval: tc.interval})
			if tc.wroteAgo > 0 {
				b.Pacer.Wrote(key, t0.Add(-tc.wroteAgo))
			}
			var r controller.Requeue
			wrote := false
			out, err := WriteStatus(t.Context(), b, StatusWrite[int]{Key: key, Now: t0, Cur: tc.cur, Next: tc.next, CountersOnly: counters, Requeue: &r},
				func(_ context.Context, s int) (*appsv1.ReplicaSet, error) {
					wrote = true
					cp := owner.DeepCopy()
					cp.ResourceVersion = "9"
					return cp, nil
				})
			require.NoError(t, err)
			assert.Equal(t, tc.wantWrite, wrote)
			assert.Equal(t, tc.wantWrite, out != nil)
			assert.Equal(t, tc.wantWakeUp, r.Earliest() > 0)
			if tc.wantWrite {
				assert.Positive(t, b.RV.Wait(owner), "the written status is expected in the cache")
			}
		})
	}
	b, _, _ := newBase(t, Spec{})
	_, err := WriteStatus(t.Context(), b, StatusWrite[int]{Key: key, Now: t0, Cur: 1, Next: 2},
		func(context.Context, int) (*appsv1.ReplicaSet, error) { return nil, errors.New("conflict") })
	assert.ErrorContains(t, err, "update status: conflict")
}

// written summarises the Fake's writes: "patch ns/name" per pod.
func written(f *podcontrol.Fake) []string {
	var out []string
	for _, a := range f.Actions() {
		out = append(out, string(a.Verb)+" "+a.Name)
	}
	return out
}

func TestAdoptOrphans(t *testing.T) {
	ref := metav1.NewControllerRef(owner, ownerKind)
	other := &metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "x", UID: "uid-x", Controller: new(true)}
	terminating := pod("terminating", map[string]string{"app": "web"}, nil)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	terminating.Finalizers = []string{"x"}
	b, _, _ := newBase(t, Spec{PodLabel: "app"},
		pod("orphan-a", map[string]string{"app": "web"}, nil),
		pod("orphan-b", map[string]string{"app": "web", "ord": "bad"}, nil),
		pod("other-app", map[string]string{"app": "db"}, nil),
		pod("owned-by-other", map[string]string{"app": "web"}, other),
		terminating,
	)
	sel, ok := Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	require.True(t, ok)
	fake := podcontrol.NewFake()
	b.PodControl = fake
	n, err := b.AdoptOrphans(t.Context(), "ns", *ref, sel, func(p *corev1.Pod) bool { return p.Labels["ord"] != "bad" })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"patch orphan-a"}, written(fake), "active, matching, accepted orphans only")
	assert.Contains(t, string(fake.Actions()[0].Patch), `"uid":"uid-orphan-a"`, "guarded by the pod's uid")

	fake.Err = func(podcontrol.Action) error {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "orphan-a", nil)
	}
	n, err = b.AdoptOrphans(t.Context(), "ns", *ref, sel, nil)
	assert.NoError(t, err, "adopted by someone else meanwhile: skipped")
	assert.Zero(t, n)
	fake.Err = func(podcontrol.Action) error { return errors.New("boom") }
	_, err = b.AdoptOrphans(t.Context(), "ns", *ref, sel, nil)
	assert.ErrorContains(t, err, "boom")

	_, ok = Selector(&metav1.LabelSelector{})
	assert.False(t, ok, "an empty selector never claims the namespace")
}

func TestReleaseUnselected(t *testing.T) {
	sel, _ := Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	gone := pod("relabelled-terminating", map[string]string{"app": "debug"}, nil)
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	pods := []*corev1.Pod{pod("kept", map[string]string{"app": "web"}, nil), pod("relabelled", map[string]string{"app": "debug"}, nil), gone}
	for _, tc := range []struct {
		skipTerminating bool
		wantKept        []string
		wantReleased    []string
	}{
		{false, []string{"kept"}, []string{"relabelled", "relabelled-terminating"}},
		{true, []string{"kept", "relabelled-terminating"}, []string{"relabelled"}},
	} {
		fake := podcontrol.NewFake()
		b := &Base{PodControl: fake}
		kept, n, err := b.ReleaseUnselected(t.Context(), owner.UID, pods, sel, tc.skipTerminating)
		require.NoError(t, err)
		var names []string
		for _, p := range kept {
			names = append(names, p.Name)
		}
		assert.Equal(t, tc.wantKept, names)
		var released []string
		for _, name := range tc.wantReleased {
			released = append(released, "patch "+name)
		}
		assert.Equal(t, released, written(fake))
		assert.Equal(t, len(tc.wantReleased), n)
	}
}

func TestAdopters(t *testing.T) {
	sets := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-picky"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
	}
	find := Adopters("ReplicaSet", func(string) ([]*appsv1.ReplicaSet, error) { return sets, nil },
		func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		func(rs *appsv1.ReplicaSet, _ metav1.Object) bool { return rs.Name != "web-picky" })
	assert.Equal(t, []types.NamespacedName{{Namespace: "ns", Name: "web"}}, find(pod("p", map[string]string{"app": "web"}, nil)))
	assert.Nil(t, find(&corev1.PersistentVolumeClaim{}), "only pods are adopted")
	failing := Adopters("ReplicaSet", func(string) ([]*appsv1.ReplicaSet, error) { return nil, errors.New("boom") },
		func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, nil)
	assert.Nil(t, failing(pod("p", map[string]string{"app": "web"}, nil)))
}
