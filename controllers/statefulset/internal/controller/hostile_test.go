package controller

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// One sync of a set at the limits (or past them, for a set stored before the
// CRD had them) does a bounded amount of work: at most burstReplicas pod
// creations, no structure sized by the reserved width, and no slot list at
// all for replicas the controller refuses.
func TestSyncHostileSizes(t *testing.T) {
	widest := func(s *appsv1beta1.StatefulSet) { // what the CRD allows at most
		s.Spec.ReserveOrdinals = nil
		for i := range 1000 {
			s.Spec.ReserveOrdinals = append(s.Spec.ReserveOrdinals, intstr.FromString(fmt.Sprintf("%d-%d", i*200+1, i*200+100)))
		}
	}
	for _, tc := range []struct {
		name        string
		replicas    int32
		opts        []setOpt
		wantCreates int
		firstPods   []string // the first pods created, by ordinal
		wantInvalid string
	}{
		{name: "Parallel at the maximum replicas with the widest reserveOrdinals", replicas: pub.MaxReplicas,
			opts: []setOpt{parallelPods, widest}, wantCreates: burstReplicas, firstPods: []string{"web-0", "web-101", "web-102"}},
		{name: "Parallel, replicas 10,000,000 (stored before the CRD maximum)", replicas: 10_000_000,
			opts: []setOpt{parallelPods}, wantInvalid: "spec.replicas: 10000000 is above the maximum 100000"},
		{name: "OrderedReady, replicas 10,000,000", replicas: 10_000_000, wantInvalid: "spec.replicas"},
		{name: "reserveOrdinals of 10^8 ordinals (stored before the CRD bound)", replicas: 3,
			opts: []setOpt{func(s *appsv1beta1.StatefulSet) {
				for i := range 1000 {
					s.Spec.ReserveOrdinals = append(s.Spec.ReserveOrdinals, intstr.FromString(fmt.Sprintf("%d-%d", i*100000, i*100000+99999)))
				}
			}}, wantInvalid: "more than 100000 ordinals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, tc.replicas, tc.opts...)
			var creates *testenv.PodCreates
			f.prepare = func(kube *kubefake.Clientset) {
				// Answered, not stored: the fake's field manager costs ~2 MB
				// a create. Past two bursts creations fail, which stops a
				// sync that knows no burst before it creates 100,000.
				creates = testenv.AnswerPodCreates(kube, 2*burstReplicas)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			done := make(chan []string, 1)
			go func() { done <- f.run() }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the sync did not finish within a minute")
			}
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d pods created, %.1f MB allocated", creates.Count(), float64(allocated)/1e6)
			assert.Less(t, allocated, uint64(100e6), "bytes allocated by the sync")
			assert.Equal(t, int64(tc.wantCreates), creates.Count(), "pods created")
			created := creates.Names()
			for _, name := range tc.firstPods {
				assert.True(t, created.Has(name), "pod %s created", name)
			}
			assert.False(t, created.Has("web-1"), "reserved ordinal 1 skipped")
			if tc.wantInvalid == "" {
				require.NoError(t, f.err)
				return
			}
			require.ErrorContains(t, f.err, tc.wantInvalid)
			assert.True(t, f.event("Warning InvalidSpec"), "events: %v", f.events)
			obj, err := f.client.Tracker().Get(appsv1beta1.SchemeGroupVersion.WithResource("statefulsets"), "ns", "web")
			require.NoError(t, err)
			var reported bool
			for _, c := range obj.(*appsv1beta1.StatefulSet).Status.Conditions {
				reported = reported || (c.Type == appsv1beta1.FailedCreatePod && strings.Contains(c.Message, tc.wantInvalid))
			}
			assert.True(t, reported, "condition FailedCreatePod names the problem: %+v", obj.(*appsv1beta1.StatefulSet).Status.Conditions)
		})
	}
}
