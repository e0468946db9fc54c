package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// testConvert is a converter like the API module's: v1alpha1 spec.old <->
// v1beta1 spec.new; a v1beta1 object with spec.only cannot go to v1alpha1
// (named in the error); spec.panic panics.
func testConvert(obj *unstructured.Unstructured, to string) error {
	if _, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "panic"); ok {
		panic("converter bug")
	}
	switch to {
	case "example.com/v1beta1":
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "spec", "old"); ok {
			unstructured.RemoveNestedField(obj.Object, "spec", "old")
			_ = unstructured.SetNestedField(obj.Object, v, "spec", "new")
		}
	case "example.com/v1alpha1":
		if _, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "only"); ok {
			return errors.New("spec.only: has no v1alpha1 equivalent")
		}
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "spec", "new"); ok {
			unstructured.RemoveNestedField(obj.Object, "spec", "new")
			_ = unstructured.SetNestedField(obj.Object, v, "spec", "old")
		}
	default:
		return fmt.Errorf("unknown version %s", to)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "keepVersion"); !ok {
		obj.SetAPIVersion(to)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "rename"); ok {
		obj.SetName("renamed")
	}
	return nil
}

func object(apiVersion, name string, spec map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "Thing",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "u-" + name}, "spec": spec})
	return b
}

func conversionReview(to string, objects ...[]byte) []byte {
	req := &apiextensionsv1.ConversionRequest{UID: "review-1", DesiredAPIVersion: to}
	for _, o := range objects {
		req.Objects = append(req.Objects, runtime.RawExtension{Raw: o})
	}
	b, _ := json.Marshal(apiextensionsv1.ConversionReview{Request: req})
	return b
}

// The conversion handler converts every object of a review in order,
// answers a refusal as a Failed result naming each object and the field,
// never passes on a converter's panic or a converter that forgot the
// apiVersion or changed the identity, refuses what is not a review (non-200,
// so the API server reports a failed call) and bodies over the bound, and
// counts every answer by result.
func TestConversionHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	s := NewServer(ServerOptions{MaxConversionBytes: 4096}, nil, metrics)
	s.RegisterConversion("/convert", "things-convert", testConvert)
	assert.Panics(t, func() { s.RegisterConversion("/convert", "again", testConvert) })

	type want struct {
		code     int
		status   string   // Success, Failure ("" when code != 200)
		message  []string // parts of the failure message
		newSpecs []map[string]any
	}
	cases := []struct {
		name   string
		method string
		body   []byte
		want   want
	}{
		{"converts each object in order", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1alpha1", "a", map[string]any{"old": "x"}),
			object("example.com/v1alpha1", "b", map[string]any{"old": "y"})),
			want{code: 200, status: "Success", newSpecs: []map[string]any{{"new": "x"}, {"new": "y"}}}},
		{"an object already at the version is returned as is", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1beta1", "a", map[string]any{"new": "x"})),
			want{code: 200, status: "Success", newSpecs: []map[string]any{{"new": "x"}}}},
		{"back", http.MethodPost, conversionReview("example.com/v1alpha1",
			object("example.com/v1beta1", "a", map[string]any{"new": "x"})),
			want{code: 200, status: "Success", newSpecs: []map[string]any{{"old": "x"}}}},
		{"a refusal names the object and the field", http.MethodPost, conversionReview("example.com/v1alpha1",
			object("example.com/v1beta1", "ok", map[string]any{"new": "x"}),
			object("example.com/v1beta1", "lossy", map[string]any{"only": "x"})),
			want{code: 200, status: "Failure", message: []string{"Thing ns/lossy (example.com/v1beta1): cannot convert to example.com/v1alpha1: spec.only: has no v1alpha1 equivalent"}}},
		{"many refusals are counted, five named", http.MethodPost, conversionReview("example.com/v1alpha1",
			object("example.com/v1beta1", "l1", map[string]any{"only": 1}), object("example.com/v1beta1", "l2", map[string]any{"only": 1}),
			object("example.com/v1beta1", "l3", map[string]any{"only": 1}), object("example.com/v1beta1", "l4", map[string]any{"only": 1}),
			object("example.com/v1beta1", "l5", map[string]any{"only": 1}), object("example.com/v1beta1", "l6", map[string]any{"only": 1}),
			object("example.com/v1beta1", "l7", map[string]any{"only": 1})),
			want{code: 200, status: "Failure", message: []string{"ns/l5", "and 2 more"}}},
		{"a converter panic is a failure", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1alpha1", "p", map[string]any{"panic": true})),
			want{code: 200, status: "Failure", message: []string{"Thing ns/p", "panicked: converter bug"}}},
		{"a converter that keeps the apiVersion", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1alpha1", "k", map[string]any{"keepVersion": true})),
			want{code: 200, status: "Failure", message: []string{"converter left apiVersion \"example.com/v1alpha1\""}}},
		{"a converter that renames", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1alpha1", "r", map[string]any{"rename": true})),
			want{code: 200, status: "Failure", message: []string{"changed kind, name, namespace or uid"}}},
		{"another group", http.MethodPost, conversionReview("example.com/v1beta1",
			object("other.com/v1alpha1", "o", nil)),
			want{code: 200, status: "Failure", message: []string{"cannot convert group other.com to example.com"}}},
		{"a version that is not group/version", http.MethodPost, conversionReview("v1beta1",
			object("example.com/v1alpha1", "a", nil)),
			want{code: 200, status: "Failure", message: []string{`desiredAPIVersion "v1beta1" is not group/version`}}},
		{"GET", http.MethodGet, nil, want{code: http.StatusMethodNotAllowed}},
		{"not JSON", http.MethodPost, []byte("{"), want{code: http.StatusBadRequest}},
		{"no request", http.MethodPost, []byte(`{"kind":"ConversionReview"}`), want{code: http.StatusBadRequest}},
		{"too large", http.MethodPost, conversionReview("example.com/v1beta1",
			object("example.com/v1alpha1", "big", map[string]any{"old": strings.Repeat("x", 5000)})),
			want{code: http.StatusRequestEntityTooLarge}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(c.method, "/convert", bytes.NewReader(c.body)))
			require.Equal(t, c.want.code, rec.Code, rec.Body.String())
			if c.want.code != http.StatusOK {
				return
			}
			var out apiextensionsv1.ConversionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.NotNil(t, out.Response)
			assert.Equal(t, "ConversionReview", out.Kind)
			assert.EqualValues(t, "review-1", out.Response.UID)
			assert.Equal(t, c.want.status, out.Response.Result.Status, out.Response.Result.Message)
			for _, m := range c.want.message {
				assert.Contains(t, out.Response.Result.Message, m)
			}
			if c.want.status == "Failure" {
				assert.Empty(t, out.Response.ConvertedObjects, "a failed review converts nothing")
			}
			require.Len(t, out.Response.ConvertedObjects, len(c.want.newSpecs))
			for i, raw := range out.Response.ConvertedObjects {
				var obj unstructured.Unstructured
				require.NoError(t, obj.UnmarshalJSON(raw.Raw))
				assert.Equal(t, c.want.newSpecs[i], obj.Object["spec"])
			}
		})
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(metrics.requests.WithLabelValues("things-convert", "converted")))
	assert.Equal(t, 7.0, testutil.ToFloat64(metrics.requests.WithLabelValues("things-convert", "failed")))
	assert.Equal(t, 4.0, testutil.ToFloat64(metrics.requests.WithLabelValues("things-convert", "error")))
	assert.Equal(t, 1, testutil.CollectAndCount(metrics.latency))
}
