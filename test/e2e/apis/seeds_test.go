package apis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	policyv1alpha1 "github.com/flotilla-dev/flotilla/apis/policy/v1alpha1"

	"github.com/flotilla-dev/flotilla/apis/testing/fixtures"
	"github.com/flotilla-dev/flotilla/apis/testing/seeds"
)

// Seed examples are often fragments ("spec: ..." or only metadata). They
// are completed by deep-merging them onto a minimal valid object of their
// kind (the seed wins; lists in the seed replace the minimal ones). The
// stored object must then contain every field the seed wrote, and show the
// schema defaults for what neither the seed nor the minimal object set.
// Namespaced objects go to the test namespace; cluster-scoped ones get a
// random name suffix so runs do not collide.
func TestSeedExamplesAreAccepted(t *testing.T) {
	h := newHarness(t)
	dir, err := seeds.Dir()
	require.NoError(t, err, "seed documents are required for this test")
	all, err := seeds.Load(dir)
	require.NoError(t, err)
	for _, e := range all {
		if reason, ok := seeds.Skipped[e.ID()]; ok {
			t.Run(e.ID(), func(t *testing.T) { t.Skipf("%s:%d: %s", e.File, e.Line, reason) })
		}
	}
	exs, err := seeds.InScope(all)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(exs), 9)

	for i, e := range exs {
		t.Run(e.ID(), func(t *testing.T) {
			k, ok := fixtures.LookupKind(e.APIVersion, e.Kind)
			require.True(t, ok, "%s %s is not served", e.APIVersion, e.Kind)
			seed := jsonRoundTrip(t, e.Object)

			name := strings.ToLower(k.Kind)
			if n, ok := fixtures.Get(seed, "metadata.name"); ok {
				name = n.(string)
			}
			if !k.Namespaced {
				name = fmt.Sprintf("%s-%s", name, rand.String(5))
			}
			name = fmt.Sprintf("%s-%d", name, i) // two seeds may share a name
			// what the seed wrote that we keep as is
			want := jsonRoundTrip(t, seed)
			fixtures.Delete(want, "metadata.name")
			fixtures.Delete(want, "metadata.namespace")
			wantStatus, hasStatus := want["status"]
			delete(want, "status")

			base := fixtures.Minimal(k, name, h.ns)
			if _, ok := fixtures.Get(seed, "spec.targetRef"); ok && k.Kind == "PodUnavailableBudget" {
				fixtures.Delete(base, "spec.selector") // a budget has a selector or a targetRef, never both
			}
			submitted := seeds.Merge(base, seed)
			fixtures.Set(submitted, "metadata.name", name)
			if k.Namespaced {
				fixtures.Set(submitted, "metadata.namespace", h.ns)
			} else {
				fixtures.Delete(submitted, "metadata.namespace")
			}
			delete(submitted, "status")
			submitted = jsonRoundTrip(t, submitted)

			ctx := context.Background()
			created, err := h.resource(k).Create(ctx, &unstructured.Unstructured{Object: submitted}, metav1.CreateOptions{FieldValidation: "Strict"})
			require.NoError(t, err, "the API server rejected the seed example")
			if !k.Namespaced {
				t.Cleanup(func() { _ = h.resource(k).Delete(context.Background(), name, metav1.DeleteOptions{}) })
			}
			assert.Empty(t, seeds.Missing(want, created.Object), "seed fields lost by the API server")
			assertDefaults(t, k.Kind, submitted, created.Object)

			if hasStatus {
				// status is ignored on create; write it through the subresource,
				// completed (like the spec) with the zero values of the fields
				// the status schema requires.
				created.Object["status"] = seeds.Merge(zeroStatus(t, k), wantStatus.(map[string]interface{}))
				updated, err := h.resource(k).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldValidation: "Strict"})
				require.NoError(t, err, "status of the seed example rejected")
				assert.Empty(t, seeds.Missing(map[string]interface{}{"status": wantStatus}, updated.Object), "seed status fields lost")
			}
		})
	}
}

// zeroStatus is the JSON of the kind's zero Go status: every required
// (non-omitempty) status field with its zero value.
func zeroStatus(t *testing.T, k fixtures.Kind) map[string]interface{} {
	t.Helper()
	sch := runtime.NewScheme()
	require.NoError(t, appsv1alpha1.AddToScheme(sch))
	require.NoError(t, appsv1beta1.AddToScheme(sch))
	require.NoError(t, policyv1alpha1.AddToScheme(sch))
	obj, err := sch.New(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
	require.NoError(t, err)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	st, _ := u["status"].(map[string]interface{})
	return st
}

// assertDefaults checks the schema defaults of kind on a stored object:
// where the submitted object set a default's path, the submitted value must
// be kept instead.
func assertDefaults(t *testing.T, kind string, submitted, stored map[string]interface{}) {
	t.Helper()
	for _, d := range fixtures.Defaults[kind] {
		want := d.Value
		if v, ok := fixtures.Get(submitted, d.Path); ok {
			want = v
		}
		got, ok := fixtures.Get(stored, d.Path)
		if assert.True(t, ok, "%s: default %s missing", kind, d.Path) {
			assert.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "%s: %s", kind, d.Path)
		}
	}
}
