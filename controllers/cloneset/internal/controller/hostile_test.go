package controller

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	flotillafake "github.com/flotilla-dev/flotilla/client/clientset/versioned/fake"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/kit/controller"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/wiring"
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
	// Pod creations are answered, not stored: the informer must not see
	// them (the second sync waits for them). Past two bursts they fail.
	creates := testenv.AnswerPodCreates(kube, 2*burstReplicas)
	kubeInf := informers.NewSharedInformerFactory(kube, 0)
	inf := flotillainformers.NewSharedInformerFactory(client, 0)
	c, err := New(wiring.Deps{
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
			return creates.Count() > 0, nil
		})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatalf("the sync did not finish within a minute (%d pods created)", creates.Count())
	}
	runtime.ReadMemStats(&after)
	assert.Equal(t, int64(burstReplicas), creates.Count(), "pods created by the first creating sync")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("one sync of a 10,000,000-replica CloneSet: %d pods created, %.1f MB allocated", creates.Count(), float64(allocated)/1e6)
	assert.Less(t, allocated, uint64(200e6), "bytes allocated by the syncs")

	// Until the informer shows those pods, the next sync creates nothing.
	require.NoError(t, c.sync(t.Context(), key))
	assert.LessOrEqual(t, creates.Count(), int64(2*burstReplicas), "at most one more burst once observed")
	assert.Equal(t, int(creates.Count()), creates.Names().Len(), "every created pod has its own name")
}
