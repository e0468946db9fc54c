package controller

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// When nearly every instance id is taken, picking ids ends (with fewer than
// asked) instead of drawing forever: here the draws come from a space of two
// ids, both used by pods.
func TestPickIDsEndsWhenTheSpaceIsFull(t *testing.T) {
	space := []string{"aaaaa", "bbbbb"}
	podWithID := func(id string) *corev1.Pod { return testPod("web-"+id, withLabel(pub.CloneSetInstanceID, id)) }
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		n    int
		want int
	}{
		{name: "full", pods: []*corev1.Pod{podWithID("aaaaa"), podWithID("bbbbb")}, n: 3, want: 0},
		{name: "one free", pods: []*corev1.Pod{podWithID("aaaaa")}, n: 3, want: 1},
		{name: "none asked", n: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var draws atomic.Int64
			draw := func() string { return space[draws.Add(1)%2] }
			done := make(chan []string, 1)
			go func() { done <- pickIDs(tc.n, tc.pods, nil, false, draw) }()
			select {
			case got := <-done:
				assert.Len(t, got, tc.want)
				assert.LessOrEqual(t, draws.Load(), int64(tc.n*idAttempts), "draws are bounded per id asked")
			case <-time.After(10 * time.Second):
				t.Fatalf("pickIDs did not return after %d draws: the loop does not end when the id space is full", draws.Load())
			}
		})
	}
}

// A CloneSet with replicas 10,000,000 (admission refuses it; one stored
// before the CRD had its maximum is not re-checked) makes one sync create
// burstReplicas pods and allocate a few megabytes, not ten million ids and
// pods; the next sync waits for those creations to be observed.
func TestSyncCreatesAtMostBurstReplicas(t *testing.T) {
	cs := testCloneSet(10_000_000)
	// NewClientset's field manager builds a REST mapper per create (~2 MB),
	// which would swamp the allocations this test measures.
	kube := fake.NewSimpleClientset() //nolint:staticcheck // see above
	client := flotillafake.NewSimpleClientset(cs)
	// Pod creations are answered here and not stored: the fake's watch
	// would not keep up, and the informer must not see them anyway (the
	// second sync waits for them). Past two bursts they fail, which stops a
	// slow start that knows no burst instead of creating millions.
	var creates atomic.Int64
	names := sets.New[string]()
	var mu sync.Mutex
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if creates.Add(1) > 2*burstReplicas {
			return true, nil, errors.New("test: too many pod creations")
		}
		obj := a.(k8stesting.CreateAction).GetObject()
		mu.Lock()
		names.Insert(obj.(metav1.Object).GetName())
		mu.Unlock()
		return true, obj, nil
	})
	kubeInf := informers.NewSharedInformerFactory(kube, 0)
	inf := flotillainformers.NewSharedInformerFactory(client, 0)
	c, err := New(Deps{
		Kube: kube, Client: client, KubeInformers: kubeInf, Informers: inf,
		Gates: features.MustNewGate(features.CloneSetShortHash, features.CloneSetPartitionRollback, features.PreDownloadImageForInPlaceUpdate),
		Clock: clock.RealClock{}, Recorder: record.NewFakeRecorder(1000),
		QueueOptions: controller.DefaultQueueOptions(),
	})
	require.NoError(t, err)
	kubeInf.Start(t.Context().Done())
	inf.Start(t.Context().Done())
	kubeInf.WaitForCacheSync(t.Context().Done())
	inf.WaitForCacheSync(t.Context().Done())
	key := types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// The first syncs create the revision and wait for the cache to show it.
	done := make(chan error, 1)
	go func() {
		done <- wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := c.sync(ctx, key); err != nil {
				return false, err
			}
			return creates.Load() > 0, nil
		})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatalf("the sync did not finish within a minute (%d pods created)", creates.Load())
	}
	runtime.ReadMemStats(&after)
	assert.Equal(t, int64(burstReplicas), creates.Load(), "pods created by the first creating sync")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("one sync of a 10,000,000-replica CloneSet: %d pods created, %.1f MB allocated", creates.Load(), float64(allocated)/1e6)
	assert.Less(t, allocated, uint64(200e6), "bytes allocated by the syncs")

	// Until the informer shows those pods, the next sync creates nothing.
	require.NoError(t, c.sync(t.Context(), key))
	assert.LessOrEqual(t, creates.Load(), int64(2*burstReplicas), "at most one more burst once observed")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, int(creates.Load()), names.Len(), "every created pod has its own name")
}
