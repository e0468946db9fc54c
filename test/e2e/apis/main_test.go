// Package apis checks the CRDs in deploy/base/crds against a real API
// server: every seed manifest written for OpenKruise is accepted and keeps
// its fields, schema defaults show up on stored objects, invalid specs are
// rejected with a message naming the field, and the two StatefulSet
// versions read each other's objects.
//
//	FLOTILLA_KUBECONFIG=<repo>/.cluster/kubeconfig go test ./apis/...
package apis

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flotilla-dev/flotilla/apis/testing/fixtures"
	"github.com/flotilla-dev/flotilla/client/clientset/versioned"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type harness struct {
	env *testenv.Env
	dyn dynamic.Interface
	cs  versioned.Interface
	ns  string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.Get(t)
	cs, err := versioned.NewForConfig(env.Config)
	require.NoError(t, err)
	return &harness{env: env, dyn: env.Dynamic(), cs: cs, ns: env.Namespace(t)}
}

func gvr(k fixtures.Kind) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

// resource returns the dynamic client for kind k in the test namespace.
func (h *harness) resource(k fixtures.Kind) dynamic.ResourceInterface {
	if k.Namespaced {
		return h.dyn.Resource(gvr(k)).Namespace(h.ns)
	}
	return h.dyn.Resource(gvr(k))
}

// jsonRoundTrip normalises a generic object the way the API server's JSON
// decoder sees it.
func jsonRoundTrip(t *testing.T, o map[string]interface{}) map[string]interface{} {
	t.Helper()
	b, err := json.Marshal(o)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(b))
	return u.Object
}
