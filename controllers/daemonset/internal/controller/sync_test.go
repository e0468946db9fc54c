package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	kitcontroller "github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
	"github.com/flotilla-dev/flotilla/kit/revision"
	"github.com/flotilla-dev/flotilla/kit/wiring/wiringtest"
)

// syncFixture is one DaemonSet "ds" in namespace "ns" over nodes and pods
// as the caches show them; sync runs the controller's sync once and returns
// the pod writes it made ("create <node>", "delete <pod>").
type syncFixture struct {
	*wiringtest.Fakes // from start
	t                 *testing.T
	ds                *appsv1alpha1.DaemonSet
	nodes             []*corev1.Node
	pods              []*corev1.Pod
	c                 *Controller
}

func newSyncFixture(t *testing.T, nodes ...string) *syncFixture {
	ds := dsWith(func(ds *appsv1alpha1.DaemonSet) {
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}}
		ds.Spec.Template.Labels = map[string]string{"app": "ds"}
		ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "a:1"}}
	})
	f := &syncFixture{t: t, ds: ds}
	for _, n := range nodes {
		f.nodes = append(f.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return f
}

// hash is the revision hash of the DaemonSet's current template.
func (f *syncFixture) hash() string {
	data, err := revision.TemplatePatch(&f.ds.Spec.Template)
	require.NoError(f.t, err)
	var collisions int32 // status.collisionCount 0, as the controller hashes
	return revision.Hash(data, &collisions)
}

// addPod adds a Ready pod of the current template on node.
func (f *syncFixture) addPod(name, node string) {
	p := pod(name, node, f.hash(), 0)
	p.Labels["app"] = "ds"
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(f.ds, kindDaemonSet)}
	f.pods = append(f.pods, p)
}

// start builds the controller over fake clients holding the fixture.
func (f *syncFixture) start() {
	objs := []runtime.Object{f.ds}
	for _, n := range f.nodes {
		objs = append(objs, n)
	}
	for _, p := range f.pods {
		objs = append(objs, p)
	}
	f.Fakes = wiringtest.New(f.t, t0.Add(time.Hour), objs...)
	c, err := New(f.Deps())
	require.NoError(f.t, err)
	f.Cache(objs...)
	f.c = c
}

func (f *syncFixture) sync() []string {
	f.t.Helper()
	writes, err := f.syncErr()
	require.NoError(f.t, err)
	return writes
}

// syncErr is sync for a sync that may fail.
func (f *syncFixture) syncErr() ([]string, error) {
	f.t.Helper()
	f.Kube.ClearActions() // Client's actions add up: TestSyncStatusCountersPaced counts them across syncs
	err := f.c.sync(context.Background(), types.NamespacedName{Namespace: "ns", Name: "ds"})
	out := []string{}
	for _, a := range f.Kube.Actions() {
		if a.GetResource().Resource != "pods" || a.GetSubresource() != "" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			out = append(out, "create "+nodeplacement.TargetNode(a.GetObject().(*corev1.Pod)))
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	slices.Sort(out)
	return out, err
}

// TestSyncBurstReplicas: one sync creates at most burstReplicas pods,
// lowest node names first; the next sync goes on with the rest.
func TestSyncBurstReplicas(t *testing.T) {
	f := newSyncFixture(t, "e", "d", "c", "b", "a")
	f.ds.Spec.BurstReplicas = iop("2")
	f.start()
	assert.Equal(t, []string{"create a", "create b"}, f.sync())
}

// TestSyncPendingCreation: a node whose pod was created but is not in the
// cache yet gets no second pod; the other nodes are not held back.
func TestSyncPendingCreation(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.BurstReplicas = iop("2")
	f.start()
	assert.Equal(t, []string{"create a", "create b"}, f.sync())
	assert.Equal(t, []string{"create c"}, f.sync(), "a and b are expected, c is not")
	assert.Empty(t, f.sync())
}

// TestSyncRollingUpdateWaitsForManage: while manage creates pods the
// rolling update takes no step in the same sync (its budget would be
// computed without them).
func TestSyncRollingUpdateWaitsForManage(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: iop("3")}
	f.addPod("pa", "a")
	f.addPod("pb", "b")
	f.ds.Spec.Template.Spec.Containers[0].Image = "a:2" // pa and pb are now old
	f.start()
	assert.Equal(t, []string{"create c"}, f.sync())
	// Next sync, the cache still without c's pod: the creation is pending,
	// the update still waits.
	assert.Empty(t, f.sync())
}

// TestSyncRollingUpdate: with the placement done, old pods are replaced
// within maxUnavailable, highest node names first.
func TestSyncRollingUpdate(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c")
	f.ds.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: iop("2")}
	f.addPod("pa", "a")
	f.addPod("pb", "b")
	f.addPod("pc", "c")
	f.ds.Spec.Template.Spec.Containers[0].Image = "a:2"
	f.start()
	assert.Equal(t, []string{"delete pb", "delete pc"}, f.sync())
}

// TestSyncFailedPodBackoff: a failed pod is deleted at once, the next
// failed pod on the same node only after the back-off (1s, doubling), so a
// kubelet that keeps rejecting the pod does not meet a hot loop.
func TestSyncFailedPodBackoff(t *testing.T) {
	f := newSyncFixture(t, "a")
	f.addPod("p1", "a")
	failed(f.pods[0])
	f.start()
	assert.Equal(t, []string{"delete p1"}, f.sync())

	// The cache shows the deletion and a second failed pod.
	f.Uncache(f.pods[0])
	f.c.deletes.Delete(types.NamespacedName{Namespace: "ns", Name: "ds"})
	f.addPod("p2", "a")
	failed(f.pods[1])
	f.Cache(f.pods[1])
	assert.Empty(t, f.sync(), "within the back-off")
	f.Clock.Step(2 * time.Second)
	assert.Equal(t, []string{"delete p2"}, f.sync(), "after it")
}

// racingIndexer adds a pod to the cache right after the sync has read the
// DaemonSet's pods: the informer event of a creation landing mid-sync.
type racingIndexer struct {
	cache.Indexer
	arrive *corev1.Pod
}

func (r *racingIndexer) ByIndex(name, value string) ([]any, error) {
	out, err := r.Indexer.ByIndex(name, value)
	if r.arrive != nil && name == kitcontroller.OwnerUIDIndex {
		_ = r.Indexer.Add(r.arrive)
		r.arrive = nil
	}
	return out, err
}

// TestSyncCreationObservedMidSync: a pod whose creation reaches the cache
// between the sync's read of the pods and its look at the expectations is
// neither missed nor duplicated (the bench saw duplicates when the pods
// were read first).
func TestSyncCreationObservedMidSync(t *testing.T) {
	f := newSyncFixture(t, "a")
	f.start()
	assert.Equal(t, []string{"create a"}, f.sync())
	var created *corev1.Pod
	for _, a := range f.Kube.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			created = c.GetObject().(*corev1.Pod)
		}
	}
	require.NotNil(t, created)
	f.c.Pods = &racingIndexer{Indexer: f.Informer(created).GetIndexer(), arrive: created}
	assert.Empty(t, f.sync(), "no second pod on a")
}

// TestSyncRejectedTemplateNotRetried: a template the API server rejects as
// a pod is tried once per generation; the condition says why; a new
// generation tries again.
func TestSyncRejectedTemplateNotRetried(t *testing.T) {
	f := newSyncFixture(t, "a", "b")
	f.start()
	f.Kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("name"), "Bad_Name", "bad")})
	})
	writes, err := f.syncErr()
	assert.Equal(t, []string{"create a"}, writes, "slow start: one attempt")
	assert.True(t, kitcontroller.IsPermanent(err))
	writes, err = f.syncErr()
	assert.NoError(t, err)
	assert.Empty(t, writes, "the same generation is not tried again")
	assert.Equal(t, "the pod template is rejected by the API server: spec.containers[0].name: Invalid value: \"Bad_Name\": bad", f.c.rejected.of(f.ds))

	next := f.ds.DeepCopy()
	next.Generation++
	f.Cache(next)
	writes, _ = f.syncErr()
	assert.Equal(t, []string{"create a"}, writes, "a new generation is tried")
}

// TestSyncStatusCountersPaced: a status whose only news is its pod counters
// is written at most once per statusInterval (the bench's creation wrote it
// at nearly every sync, twice as often as kube-controller-manager); the held
// back counters are written once the interval has passed.
func TestSyncStatusCountersPaced(t *testing.T) {
	f := newSyncFixture(t, "a", "b")
	f.addPod("pa", "a")
	f.addPod("pb", "b")
	f.start()
	client := f.Client
	statusWrites := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	assert.Empty(t, f.sync())
	require.Equal(t, 1, statusWrites(), "first status: written at once")
	written, err := client.AppsV1alpha1().DaemonSets("ns").Get(context.Background(), "ds", metav1.GetOptions{})
	require.NoError(t, err)
	f.Cache(written)
	assert.Equal(t, int32(2), written.Status.NumberReady)

	pb := f.pods[1].DeepCopy()
	notReady(pb)
	f.Cache(pb)
	f.Clock.Step(300 * time.Millisecond)
	assert.Empty(t, f.sync())
	assert.Equal(t, 1, statusWrites(), "numberReady 2 → 1 alone is held back")

	f.Clock.Step(statusInterval)
	assert.Empty(t, f.sync())
	require.Equal(t, 2, statusWrites(), "written once the interval has passed")
	written, err = client.AppsV1alpha1().DaemonSets("ns").Get(context.Background(), "ds", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), written.Status.NumberReady)
}

// TestSyncNameCollisionRetried: a pod name the controller chose that another
// pod already has is tried again under another name, with no Warning.
func TestSyncNameCollisionRetried(t *testing.T) {
	f := newSyncFixture(t, "a")
	f.start()
	var names []string
	f.Kube.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		names = append(names, p.Name)
		if len(names) == 1 {
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, p.Name)
		}
		return false, nil, nil
	})
	assert.Equal(t, []string{"create a", "create a"}, f.sync())
	require.Len(t, names, 2)
	assert.NotEqual(t, names[0], names[1], "a second name")
	for _, e := range f.Events() {
		assert.NotContains(t, e, "Warning", "no FailedCreate for a name collision")
	}
	assert.Empty(t, f.sync(), "the created pod is expected: no third create")
}

// TestSyncSlowStartResumes: a DaemonSet whose creates succeeded begins its
// next slow start at the batch the last one reached (a rolling update's
// waves do not climb from 1 again); after a failure it is back to batches of
// 1, so a persistent error costs one request per sync.
func TestSyncSlowStartResumes(t *testing.T) {
	f := newSyncFixture(t, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p")
	f.ds.Spec.BurstReplicas = iop("8")
	f.start()
	key := types.NamespacedName{Namespace: "ns", Name: "ds"}
	assert.Len(t, f.sync(), 8, "batches 1, 2, 4, then 1 of a batch of 8")
	assert.Equal(t, 8, f.c.batches.First(key))

	f.Kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	})
	writes, err := f.syncErr()
	require.Error(t, err)
	assert.Len(t, writes, 8, "the next 8 nodes in one batch, all refused")
	assert.Equal(t, 1, f.c.batches.First(key), "a failure sends the DaemonSet back to 1")
	writes, err = f.syncErr()
	require.Error(t, err)
	assert.Len(t, writes, 1, "then one request per sync")
}
