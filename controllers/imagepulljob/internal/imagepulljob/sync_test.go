package imagepulljob

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/controllers/imagepulljob/internal/scope"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// Fixture-and-actions tests of sync: the controller is built by New over fake clientsets, its informers' indexers
// are seeded by hand (never started), sync runs once per step and the tests assert on the writes the fakes
// recorded. settle plays the informers catching up with those writes.

var syncNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type syncFixture struct {
	*wiringtest.Fakes
	t             *testing.T
	jobIdx, niIdx cache.Indexer
	c             *Controller
}

// newSyncFixture holds j, nis and the kube objects (secrets) in the fake clientsets and j and nis in the caches.
func newSyncFixture(t *testing.T, j *appsv1beta1.ImagePullJob, kubeObjs []runtime.Object, nis ...*appsv1beta1.NodeImage) *syncFixture {
	t.Helper()
	cached := []runtime.Object{j}
	for _, ni := range nis {
		cached = append(cached, ni)
	}
	f := &syncFixture{Fakes: wiringtest.New(t, syncNow, append(cached, kubeObjs...)...), t: t}
	// Without it the write expectations would be met by the stale cached copies and never hold a sync back.
	f.BumpResourceVersions()
	c, err := New(f.Deps())
	require.NoError(t, err)
	t.Cleanup(c.Queue.ShutDown)
	c.jitter = func(int32) int32 { return 0 } // deterministic tag TTLs
	f.c = c
	f.Cache(cached...)
	f.jobIdx = f.Informer(j).GetIndexer()
	f.niIdx = f.Informer(&appsv1beta1.NodeImage{}).GetIndexer() // the shared, filtered informer New took
	return f
}

func (f *syncFixture) sync(name string) {
	f.t.Helper()
	f.Clear()
	require.NoError(f.t, f.c.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}))
}

// writtenNodeImages are the NodeImages the last sync updated, by name.
func (f *syncFixture) writtenNodeImages() map[string]*appsv1beta1.NodeImage {
	out := map[string]*appsv1beta1.NodeImage{}
	for _, a := range f.Client.Actions() {
		if a.Matches("update", "nodeimages") {
			ni := a.(k8stesting.UpdateAction).GetObject().(*appsv1beta1.NodeImage)
			out[ni.Name] = ni
		}
	}
	return out
}

// statusWritten is the status of the one status update of the last sync.
func (f *syncFixture) statusWritten() appsv1beta1.ImagePullJobStatus {
	return wiringtest.OnlyUpdate[*appsv1beta1.ImagePullJob](f.Fakes, "imagepulljobs", "status").Status
}

// settle makes the caches show what the fake API server holds now, as the informers would after the writes.
func (f *syncFixture) settle() {
	f.t.Helper()
	ctx := context.Background()
	jobs, err := f.Client.AppsV1beta1().ImagePullJobs("").List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	var items []any
	for i := range jobs.Items {
		items = append(items, &jobs.Items[i])
	}
	require.NoError(f.t, f.jobIdx.Replace(items, ""))
	nis, err := f.Client.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	items = nil
	for i := range nis.Items {
		items = append(items, &nis.Items[i])
	}
	require.NoError(f.t, f.niIdx.Replace(items, ""))
}

// updateCachedJob / updateCachedNodeImage change a cached object only (someone else's write the informer saw).
func (f *syncFixture) updateCachedJob(name string, mutate func(*appsv1beta1.ImagePullJob)) {
	f.t.Helper()
	obj, ok, err := f.jobIdx.GetByKey("ns/" + name)
	require.NoError(f.t, err)
	require.True(f.t, ok, name)
	j := obj.(*appsv1beta1.ImagePullJob).DeepCopy()
	mutate(j)
	require.NoError(f.t, f.jobIdx.Update(j))
}

func (f *syncFixture) updateCachedNodeImage(name string, mutate func(*appsv1beta1.NodeImage)) {
	f.t.Helper()
	obj, ok, err := f.niIdx.GetByKey(name)
	require.NoError(f.t, err)
	require.True(f.t, ok, name)
	ni := obj.(*appsv1beta1.NodeImage).DeepCopy()
	mutate(ni)
	require.NoError(f.t, f.niIdx.Update(ni))
}

// stored gives a NodeImage the UID and resourceVersion an API server would (the write expectations key on them).
func stored(ni *appsv1beta1.NodeImage) *appsv1beta1.NodeImage {
	ni.UID = types.UID("uid-" + ni.Name)
	ni.ResourceVersion = "1"
	return ni
}

// syncJob is job("a") (ns/j-a, nginx:1.25) as stored, with mutate applied.
func syncJob(mutate func(j *appsv1beta1.ImagePullJob)) *appsv1beta1.ImagePullJob {
	j := job("a")
	j.ResourceVersion = "1"
	j.Spec.CompletionPolicy.Type = appsv1beta1.Always
	if mutate != nil {
		mutate(j)
	}
	return j
}

func succeeded(ni *appsv1beta1.NodeImage) {
	ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"nginx": {Tags: []appsv1beta1.ImageTagStatus{
		{Tag: "1.25", Version: ni.Spec.Images["nginx"].Tags[0].Version, Phase: appsv1beta1.ImagePhaseSucceeded}}}}
}

// A new job writes its tag into the NodeImages of the nodes it selects, the first `parallelism` of them by name,
// and records its start; the nodes it does not select are never written.
func TestSyncNewJobWritesSelectedNodesUpToParallelism(t *testing.T) {
	pool := func(p string) map[string]string { return map[string]string{"pool": p} }
	for _, c := range []struct {
		name    string
		sel     *appsv1beta1.ImagePullJobNodeSelector
		written []string
		desired int32
	}{
		{name: "by labels", sel: &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: pool("a")}},
			written: []string{"n1", "n3"}, desired: 3},
		{name: "by names (one without a NodeImage)", sel: &appsv1beta1.ImagePullJobNodeSelector{Names: []string{"n4", "n2", "n9", "n3"}},
			written: []string{"n2", "n3"}, desired: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := syncJob(func(j *appsv1beta1.ImagePullJob) {
				j.Spec.Selector = c.sel
				j.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
			})
			f := newSyncFixture(t, j, nil,
				stored(nodeImage("n1", pool("a"))), stored(nodeImage("n2", pool("b"))),
				stored(nodeImage("n3", pool("a"))), stored(nodeImage("n4", pool("a"))))
			f.sync(j.Name)

			want := []string{}
			for _, n := range c.written {
				want = append(want, "update nodeimages "+n)
			}
			assert.Equal(t, append(want, "update imagepulljobs/status j-a"), f.Writes())
			now := metav1.NewTime(syncNow)
			for name, ni := range f.writtenNodeImages() {
				assert.Equal(t, map[string]appsv1beta1.ImageSpec{"nginx": {Tags: []appsv1beta1.ImageTagSpec{{
					Tag: "1.25", Version: 0, CreatedAt: &now, ImagePullPolicy: appsv1beta1.PullIfNotPresent,
					OwnerReferences: []corev1.ObjectReference{ownerRef(j)},
					// Always without deadline or TTL: the tag lives timeout × backoffLimit.
					PullPolicy: &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
						TTLSecondsAfterFinished: ptr.To[int32](1800)},
				}}}}, ni.Spec.Images, name)
			}
			assert.Equal(t, appsv1beta1.ImagePullJobStatus{StartTime: &now, Desired: c.desired, Message: "job is running, progress 0.0%"},
				f.statusWritten(), "the nodes just written count once the cache shows them")
		})
	}
}

// Parallelism holds over syncs: no node is written again (or one too many) before the cache shows the previous
// writes, none while `parallelism` nodes pull, and the next one as soon as one finishes.
func TestSyncParallelismAcrossSyncs(t *testing.T) {
	j := syncJob(func(j *appsv1beta1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("50%")) })
	f := newSyncFixture(t, j, nil, stored(nodeImage("n1", nil)), stored(nodeImage("n2", nil)),
		stored(nodeImage("n3", nil)), stored(nodeImage("n4", nil)))

	f.sync(j.Name)
	assert.Equal(t, []string{"update nodeimages n1", "update nodeimages n2", "update imagepulljobs/status j-a"}, f.Writes(),
		"50% of 4 nodes")

	// The job's status write reached the cache, the NodeImage writes not yet: n1 and n2 look untouched.
	obj, err := f.Client.AppsV1beta1().ImagePullJobs("ns").Get(context.Background(), j.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, f.jobIdx.Update(obj))
	f.sync(j.Name)
	assert.Empty(t, f.Writes(), "waits for its NodeImage writes to reach the cache")

	f.settle()
	f.sync(j.Name)
	assert.Equal(t, []string{"update imagepulljobs/status j-a"}, f.Writes(), "two nodes pulling: none more")
	assert.Equal(t, int32(2), f.statusWritten().Active)

	f.settle()
	f.updateCachedNodeImage("n1", succeeded)
	f.sync(j.Name)
	assert.Equal(t, []string{"update nodeimages n3", "update imagepulljobs/status j-a"}, f.Writes(), "n1 finished: n3 takes its place")
	st := f.statusWritten()
	assert.Equal(t, int32(1), st.Active)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, "job is running, progress 25.0%", st.Message)
}

// The job's status counts what the nodes report for the tag the job wrote; once written and seen in the cache, a
// sync writes nothing more.
func TestSyncStatusFromNodeImages(t *testing.T) {
	start := metav1.NewTime(syncNow.Add(-time.Minute))
	now := metav1.NewTime(syncNow)
	owner := syncJob(nil)
	nodes := func() []*appsv1beta1.NodeImage {
		return []*appsv1beta1.NodeImage{
			stored(withTag("n1", owner, 0, 0, appsv1beta1.ImagePhaseSucceeded)),
			stored(withTag("n2", owner, 1, 1, appsv1beta1.ImagePhaseFailed)),
			stored(withTag("n3", owner, 0, 0, appsv1beta1.ImagePhasePulling)),
			stored(withTag("n4", owner, 2, 1, appsv1beta1.ImagePhaseSucceeded)), // an older round's report: pulling
			// Not written yet: parallelism (1) is used up.
			stored(nodeImage("n5", nil)),
		}
	}
	for _, c := range []struct {
		name   string
		policy appsv1beta1.CompletionPolicyType
		nodes  []string
		want   appsv1beta1.ImagePullJobStatus
	}{
		{name: "running", policy: appsv1beta1.Always, nodes: []string{"n1", "n2", "n3", "n4", "n5"},
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, Desired: 5, Active: 2, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"n2"}, Message: "job is running, progress 40.0%"}},
		{name: "every node finished: completed", policy: appsv1beta1.Always, nodes: []string{"n1", "n2"},
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &now, Desired: 2, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"n2"}, Message: "job has completed"}},
		{name: "Never never completes", policy: appsv1beta1.Never, nodes: []string{"n1", "n2"},
			want: appsv1beta1.ImagePullJobStatus{StartTime: &start, Desired: 2, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"n2"}, Message: "job is running, progress 100.0%"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := syncJob(func(j *appsv1beta1.ImagePullJob) {
				j.Spec.CompletionPolicy.Type = c.policy
				j.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{Names: c.nodes}
				j.Status = appsv1beta1.ImagePullJobStatus{StartTime: &start, Desired: 1, Message: "job is running, progress 0.0%"}
			})
			f := newSyncFixture(t, j, nil, nodes()...)
			f.sync(j.Name)
			assert.Equal(t, []string{"update imagepulljobs/status j-a"}, f.Writes())
			assert.Equal(t, c.want, f.statusWritten())

			f.settle()
			f.sync(j.Name)
			assert.Empty(t, f.Writes(), "the status already says it all")
		})
	}
}

// completionPolicy Always with activeDeadlineSeconds: the job is requeued for its deadline and, there, completes
// with every unfinished node failed and nothing more written.
func TestSyncActiveDeadline(t *testing.T) {
	start := metav1.NewTime(syncNow.Add(-600 * time.Second))
	owner := syncJob(nil)
	j := syncJob(func(j *appsv1beta1.ImagePullJob) {
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](900)
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
		j.Status = appsv1beta1.ImagePullJobStatus{StartTime: &start}
	})
	f := newSyncFixture(t, j, nil,
		stored(withTag("n1", owner, 0, 0, appsv1beta1.ImagePhaseSucceeded)),
		stored(withTag("n2", owner, 0, 0, appsv1beta1.ImagePhasePulling)),
		stored(nodeImage("n3", nil)), stored(nodeImage("n4", nil)))

	f.sync(j.Name)
	assert.Equal(t, []string{"update nodeimages n3", "update imagepulljobs/status j-a"}, f.Writes())
	assert.Equal(t, &appsv1beta1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
		ActiveDeadlineSeconds: ptr.To[int64](900), TTLSecondsAfterFinished: ptr.To[int32](900)},
		f.writtenNodeImages()["n3"].Spec.Images["nginx"].Tags[0].PullPolicy, "the tag carries the job's deadline")
	assert.Nil(t, f.statusWritten().CompletionTime)

	assert.Zero(t, f.c.Queue.Len())
	f.Clock.Step(299 * time.Second)
	assert.Zero(t, f.c.Queue.Len(), "not before the deadline")
	f.Clock.Step(time.Second)
	require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond, "requeued at the deadline")

	f.settle()
	f.updateCachedNodeImage("n2", succeeded) // a slot is free: before the deadline n4 would be written now
	f.sync(j.Name)
	assert.Equal(t, []string{"update imagepulljobs/status j-a"}, f.Writes(), "no node written past the deadline")
	at := metav1.NewTime(syncNow.Add(300 * time.Second))
	assert.Equal(t, appsv1beta1.ImagePullJobStatus{StartTime: &start, CompletionTime: &at, Desired: 4, Succeeded: 2, Failed: 2,
		FailedNodes: []string{"n3", "n4"}, Message: msgDeadlineExceeded}, f.statusWritten())
}

// ttlSecondsAfterFinished: a completed job is requeued for its TTL and deleted then (only that job: UID
// precondition); its NodeImages are left to the NodeImage reconciler.
func TestSyncTTLAfterFinished(t *testing.T) {
	owner := syncJob(nil)
	j := syncJob(func(j *appsv1beta1.ImagePullJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](60)
		j.Status = appsv1beta1.ImagePullJobStatus{StartTime: &metav1.Time{Time: syncNow.Add(-100 * time.Second)},
			CompletionTime: &metav1.Time{Time: syncNow.Add(-30 * time.Second)}, Desired: 1, Succeeded: 1, Message: msgCompleted}
	})
	f := newSyncFixture(t, j, nil, stored(withTag("n1", owner, 0, 0, appsv1beta1.ImagePhaseSucceeded)))

	f.sync(j.Name)
	assert.Empty(t, f.Writes(), "30s of the 60s TTL left")
	f.Clock.Step(29 * time.Second)
	assert.Zero(t, f.c.Queue.Len(), "not before the TTL")
	f.Clock.Step(time.Second)
	require.Eventually(t, func() bool { return f.c.Queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond, "requeued at the TTL")

	f.sync(j.Name)
	require.Equal(t, []string{"delete imagepulljobs j-a"}, f.Writes())
	del := f.Client.Actions()[0].(k8stesting.DeleteAction)
	require.NotNil(t, del.GetDeleteOptions().Preconditions)
	assert.Equal(t, ptr.To(j.UID), del.GetDeleteOptions().Preconditions.UID)
}

// Pull secrets: the job first gets its protection finalizer; then copies of its secrets go to the agent's
// namespace (a missing one is skipped with an event) and the NodeImages reference them; once the job is deleted
// the copies are released (deleted when no other job uses them) and the finalizer removed. After that, and once
// the job is gone, a sync writes nothing.
func TestSyncPullSecretsLifecycle(t *testing.T) {
	ns := scope.DefaultAgentNamespace
	regcred := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte("{}")}}
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shared"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}}
	// Another job's copy of "shared", made earlier.
	sharedCopy := claimCopy(shared, nil, ns, "ns/j-b")
	sharedCopy.UID = "uid-shared-copy"
	j := syncJob(func(j *appsv1beta1.ImagePullJob) {
		j.Spec.PullSecrets = []string{"regcred", "shared", "missing"}
		// A TTL on a job deleted before it completed: the TTL never applies (and no completion time is read).
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](60)
	})
	f := newSyncFixture(t, j, []runtime.Object{regcred, shared, sharedCopy}, stored(nodeImage("n1", nil)))

	f.sync(j.Name)
	assert.Equal(t, []string{"update imagepulljobs j-a"}, f.Writes(), "the finalizer first, nothing else")
	f.settle()
	cached, _, err := f.jobIdx.GetByKey("ns/j-a")
	require.NoError(t, err)
	assert.Equal(t, []string{ProtectionFinalizer}, cached.(*appsv1beta1.ImagePullJob).Finalizers)

	f.sync(j.Name)
	regcredCopy, sharedCopyName := copyName("ns", "regcred"), copyName("ns", "shared")
	assert.Equal(t, []string{"create secrets " + regcredCopy, "update secrets " + sharedCopyName,
		"update nodeimages n1", "update imagepulljobs/status j-a"}, f.Writes())
	assert.Equal(t, []appsv1beta1.ReferenceObject{{Namespace: ns, Name: regcredCopy, Mode: "batch"}, {Namespace: ns, Name: sharedCopyName, Mode: "batch"}},
		f.writtenNodeImages()["n1"].Spec.Images["nginx"].PullSecrets)
	assert.Equal(t, []string{"Warning PullSecretNotFound spec.pullSecrets: secret ns/missing not found"}, f.Events())
	copies, err := f.Kube.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	refs := map[string]string{}
	for _, s := range copies.Items {
		refs[s.Name] = s.Annotations[SecretAnnotationReferences]
	}
	assert.Equal(t, map[string]string{regcredCopy: "ns/j-a", sharedCopyName: "ns/j-a,ns/j-b"}, refs)

	f.settle()
	f.updateCachedJob(j.Name, func(j *appsv1beta1.ImagePullJob) { j.DeletionTimestamp = &metav1.Time{Time: syncNow} })
	f.sync(j.Name)
	// The copies are listed from the API, in no set order.
	assert.ElementsMatch(t, []string{"update imagepulljobs j-a", "delete secrets " + regcredCopy, "update secrets " + sharedCopyName}, f.Writes(),
		"copies released, the finalizer removed; the NodeImages are the NodeImage reconciler's")
	removed := f.Client.Actions()[0].(k8stesting.UpdateAction).GetObject().(*appsv1beta1.ImagePullJob)
	assert.Empty(t, removed.Finalizers)
	copies, err = f.Kube.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, copies.Items, 1)
	assert.Equal(t, "ns/j-b", copies.Items[0].Annotations[SecretAnnotationReferences], "j-b still uses its copy")

	f.settle()
	f.updateCachedJob(j.Name, func(j *appsv1beta1.ImagePullJob) { j.DeletionTimestamp = &metav1.Time{Time: syncNow} })
	f.sync(j.Name)
	assert.Empty(t, f.Writes(), "deleting, no finalizer left: nothing to do")

	require.NoError(t, f.jobIdx.Delete(cached))
	f.sync(j.Name)
	assert.Empty(t, f.Client.Actions(), "gone: not even a read")
	assert.Empty(t, f.Kube.Actions())
}

// A job (completionPolicy Always) whose selector finds no node in the cache completes only once the API server
// confirms it has none: created right after its nodes, it would otherwise complete before the cache shows them, and
// a completed job never pulls.
func TestSyncNoTargetConfirmedOnAPIServer(t *testing.T) {
	t.Run("a NodeImage not cached yet", func(t *testing.T) {
		j := syncJob(nil)
		f := newSyncFixture(t, j, nil)
		_, err := f.Client.AppsV1beta1().NodeImages().Create(context.Background(), stored(nodeImage("n1", nil)), metav1.CreateOptions{})
		require.NoError(t, err)
		f.sync(j.Name)
		assert.Equal(t, []string{"update imagepulljobs/status j-a"}, f.Writes(), "its tag is written once the cache shows it")
		st := f.statusWritten()
		assert.Nil(t, st.CompletionTime, "running, not completed")
		assert.Equal(t, int32(1), st.Desired)
	})
	t.Run("none on the API server either", func(t *testing.T) {
		j := syncJob(nil)
		f := newSyncFixture(t, j, nil)
		f.sync(j.Name)
		assert.Equal(t, []string{"update imagepulljobs/status j-a"}, f.Writes())
		assert.NotNil(t, f.statusWritten().CompletionTime, "completed: nothing to pull")
	})
	t.Run("completionPolicy Never: no live list", func(t *testing.T) {
		j := syncJob(func(j *appsv1beta1.ImagePullJob) { j.Spec.CompletionPolicy.Type = appsv1beta1.Never })
		f := newSyncFixture(t, j, nil)
		f.sync(j.Name)
		for _, a := range f.Client.Actions() {
			assert.False(t, a.Matches("list", "nodeimages"), "the cache decides a job that never completes")
		}
	})
}

// Two jobs pulling on one node: the second one synced while the cache still trails the first one's NodeImage
// write is held back (it must not write over a stale copy), and the informer's event for that write — a spec
// change, on a NodeImage it owns nothing on yet — brings it back at once rather than when the expectation times
// out (five minutes). The node agent's status reports (same generation) do not bring back jobs that own nothing there.
func TestSyncSecondJobWokenByTheFirstJobsNodeImageWrite(t *testing.T) {
	a := syncJob(nil)
	b := syncJob(func(j *appsv1beta1.ImagePullJob) { j.Name, j.UID = "j-b", uid("b") })
	f := newSyncFixture(t, a, nil, stored(nodeImage("n1", nil)))
	b, err := f.Client.AppsV1beta1().ImagePullJobs("ns").Create(context.Background(), b, metav1.CreateOptions{})
	require.NoError(t, err)
	f.Cache(b)

	f.sync(a.Name)
	require.Equal(t, []string{"update nodeimages n1", "update imagepulljobs/status j-a"}, f.Writes())
	f.sync(b.Name)
	assert.Empty(t, f.Writes(), "held back until the cache shows j-a's write")

	queued := func() []string {
		var keys []string
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			keys = append(keys, k.Name)
			f.c.Queue.Done(k)
		}
		slices.Sort(keys)
		return keys
	}
	obj, _, err := f.niIdx.GetByKey("n1")
	require.NoError(t, err)
	before := obj.(*appsv1beta1.NodeImage)
	after, err := f.Client.AppsV1beta1().NodeImages().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	after.Generation = before.Generation + 1 // what the API server does on a spec write (the fake does not)
	require.NoError(t, f.niIdx.Update(after))

	reported := after.DeepCopy()
	reported.ResourceVersion += "0"
	reported.Status.Desired = 1
	f.c.nodeImageHandler().OnUpdate(before, after)
	assert.Equal(t, []string{"j-a", "j-b"}, queued(), "the tag's owner and the job waiting for the write")
	f.c.nodeImageHandler().OnUpdate(after, reported)
	assert.Equal(t, []string{"j-a"}, queued(), "a status report: the tag's owner only")

	f.sync(b.Name)
	assert.Equal(t, []string{"update nodeimages n1", "update imagepulljobs/status j-b"}, f.Writes())
	tag := f.writtenNodeImages()["n1"].Spec.Images["nginx"].Tags[0]
	assert.Equal(t, int64(1), tag.Version, "j-b takes j-a's tag over for a new round")
	assert.Equal(t, []corev1.ObjectReference{ownerRef(a), ownerRef(b)}, tag.OwnerReferences)
}
