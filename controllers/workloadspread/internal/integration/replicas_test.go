package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/webhook"
	"github.com/flotilla-dev/flotilla/controllers/workloadspread/internal/workload"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Two webhook replicas (each its own cache, lock and last-written status)
// admit 50 pods at once against a subset of maxReplicas 10: the status
// write's resourceVersion alone keeps them from overfilling it — exactly 10
// admissions get the subset, and the status records exactly 10.
func TestTwoReplicasNeverOverfill(t *testing.T) {
	h := newHarness(t)
	cs := h.cloneSet("two", 50)
	h.spreads.Create(newSpread("ws", "apps.kruise.io/v1alpha1", "CloneSet", "two", subset("ten", "zone-0", "10"), subset("rest", "zone-1", "")))
	var replicas []*webhook.Handlers
	for range 2 {
		f := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0, flotillainformers.WithNamespace(h.NS))
		inf := f.Apps().V1alpha1().WorkloadSpreads()
		replicas = append(replicas, &webhook.Handlers{Spreads: inf.Lister(), Client: h.Client, Kube: h.Env.Kube,
			Targets: workload.Client{Kube: h.Env.Kube, Kruise: h.Client}})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			raw, err := json.Marshal(ownedPod(cs, fmt.Sprintf("two-%d", i)))
			require.NoError(t, err)
			req := kitwebhook.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprint(i)), Operation: admissionv1.Create,
				Namespace: h.NS, Object: runtime.RawExtension{Raw: raw}}}
			resp := replicas[i%2].MutatePod(context.Background(), req)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			subset := ""
			if len(resp.Patch) > 0 {
				subset = "placed"
				var ops []map[string]any
				require.NoError(t, json.Unmarshal(resp.Patch, &ops))
				for _, op := range ops {
					if v, ok := op["value"].(map[string]any); ok {
						if a, ok := v["apps.kruise.io/matched-workloadspread"].(string); ok {
							subset = a
						}
					}
					if a, ok := op["value"].(string); ok && op["path"] == "/metadata/annotations/apps.kruise.io~1matched-workloadspread" {
						subset = a
					}
				}
			}
			mu.Lock()
			got[subset]++
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Equal(t, 10, got[`{"name":"ws","subset":"ten"}`], "admissions: %v", got)
	assert.Equal(t, 40, got[`{"name":"ws","subset":"rest"}`], "admissions: %v", got)
	w, err := h.Client.AppsV1alpha1().WorkloadSpreads(h.NS).Get(context.Background(), "ws", metav1.GetOptions{})
	require.NoError(t, err)
	s := subsetStatus(w, "ten")
	assert.Len(t, s.CreatingPods, 10)
	assert.Equal(t, int32(0), s.MissingReplicas)
}
