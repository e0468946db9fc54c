package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// staticCerts serves one generated certificate.
type staticCerts struct{ certHolder }

func newStaticCerts(t *testing.T) (*staticCerts, *x509.CertPool) {
	t.Helper()
	data, _, err := PlanCerts(time.Now(), nil, (&Options{ServiceName: "w", Namespace: "ns"}).CertPolicy())
	require.NoError(t, err)
	s := &staticCerts{}
	require.NoError(t, s.load(data[KeyTLSCert], data[KeyTLSKey], data[KeyCACert]))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(data[KeyCACert]))
	return s, pool
}

func review(t *testing.T, op admissionv1.Operation, obj runtime.Object) []byte {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Namespace: "ns",
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}},
	})
	require.NoError(t, err)
	return b
}

// The server answers AdmissionReviews over TLS with the handler registered
// for the path: patches as JSONPatch, denials with their message, warnings;
// broken requests are rejected and panicking handlers answer HTTP 500 (so
// that failurePolicy decides), not crashes; every
// answer is counted by handler and result, and timed.
func TestServer(t *testing.T) {
	certs, pool := newStaticCerts(t)
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0"}, certs, metrics)
	s.Register("/mutate", "label-pods", HandlerFunc(func(_ context.Context, req Request) Response {
		var pod corev1.Pod
		if err := req.DecodeObject(&pod); err != nil {
			return Errored(http.StatusBadRequest, err)
		}
		if pod.Name == "deny-me" {
			return Denied("spec.containers[0].name: %q is reserved", pod.Spec.Containers[0].Name)
		}
		if pod.Name == "panic" {
			panic("boom")
		}
		mutated := pod.DeepCopy()
		mutated.Labels = map[string]string{"injected": "true"}
		return Patched(req.Object.Raw, mutated, "labelled")
	}))
	assert.Panics(t, func() { s.Register("/mutate", "again", HandlerFunc(nil)) })
	require.Error(t, s.Ready(), "not ready before serving")
	require.NoError(t, s.Listen())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "w.ns.svc"}}}
	post := func(path string, body []byte) *admissionv1.AdmissionResponse {
		t.Helper()
		resp, err := client.Post("https://"+s.Addr()+path, "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out admissionv1.AdmissionReview
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.NotNil(t, out.Response)
		return out.Response
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	}

	r := post("/mutate", review(t, admissionv1.Create, pod("web")))
	assert.Equal(t, "uid-1", string(r.UID))
	assert.True(t, r.Allowed)
	require.NotNil(t, r.PatchType)
	assert.Equal(t, admissionv1.PatchTypeJSONPatch, *r.PatchType)
	assert.JSONEq(t, `[{"op":"add","path":"/metadata/labels","value":{"injected":"true"}}]`, string(r.Patch))
	assert.Equal(t, []string{"labelled"}, r.Warnings)

	r = post("/mutate", review(t, admissionv1.Create, pod("deny-me")))
	assert.False(t, r.Allowed)
	assert.Equal(t, int32(http.StatusForbidden), r.Result.Code)
	assert.Equal(t, `spec.containers[0].name: "app" is reserved`, r.Result.Message)

	// A panic is the webhook's own failure: HTTP 500, no AdmissionReview, so the API server applies failurePolicy.
	resp, err := client.Post("https://"+s.Addr()+"/mutate", "application/json", bytes.NewReader(review(t, admissionv1.Create, pod("panic"))))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(body), "webhook label-pods panicked: boom")

	r = post("/mutate", []byte(`{"kind":"AdmissionReview"}`))
	assert.False(t, r.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), r.Result.Code)

	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.requests.WithLabelValues("label-pods", "allowed")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.requests.WithLabelValues("label-pods", "denied")))
	assert.Equal(t, 2.0, testutil.ToFloat64(metrics.requests.WithLabelValues("label-pods", "error")))
	n, err := testutil.GatherAndCount(reg, "webhook_request_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one latency series for the handler")
	out, err := testutil.CollectAndLint(metrics.latency)
	require.NoError(t, err)
	assert.Empty(t, out)

	// A second registration of the metrics on the same registry is refused.
	_, err = NewMetrics(reg)
	assert.Error(t, err)

	cancel()
	require.NoError(t, <-done)
	assert.Error(t, s.Ready(), "not ready after shutdown")
}

// Without a certificate the TLS handshake fails rather than serving an
// unauthenticated one.
func TestServerWithoutCertificate(t *testing.T) {
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0"}, &staticCerts{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	_, err := client.Post("https://"+s.Addr()+"/x", "application/json", strings.NewReader("{}"))
	require.Error(t, err)
}

func TestRequestDecode(t *testing.T) {
	var p corev1.Pod
	r := Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u"}}
	assert.ErrorContains(t, r.DecodeObject(&p), "has no object")
	assert.ErrorContains(t, r.DecodeOldObject(&p), "has no old object")
	r.OldObject.Raw = []byte(`{"metadata":{"name":"old"}}`)
	require.NoError(t, r.DecodeOldObject(&p))
	assert.Equal(t, "old", p.Name)
	assert.False(t, r.IsDryRun())
	dry := true
	r.DryRun = &dry
	assert.True(t, r.IsDryRun())
	assert.Equal(t, "error", Errored(500, errors.New("x")).result())
	assert.Equal(t, int32(422), Invalid(fmt.Sprintf("spec.x: %s", "bad")).Result.Code)
}

// On shutdown the server reports not ready at once but keeps answering for
// ShutdownDelay, so the API server's calls in flight to a terminating replica
// still succeed.
func TestServerDrainsBeforeShutdown(t *testing.T) {
	certs, pool := newStaticCerts(t)
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0", ShutdownDelay: 500 * time.Millisecond}, certs, nil)
	s.Register("/ok", "ok", HandlerFunc(func(context.Context, Request) Response { return Allowed() }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return s.Ready() != nil }, time.Second, time.Millisecond, "not ready once shutting down")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "w.ns.svc"}}}
	resp, err := client.Post("https://"+s.Addr()+"/ok", "application/json", bytes.NewReader(review(t, admissionv1.Create, &corev1.Pod{})))
	require.NoError(t, err, "still serving while draining")
	_ = resp.Body.Close()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop after the delay")
	}
}

// A server started before its caches synced (it converts what they read)
// converts at once but answers its admission paths 503 until they synced.
func TestHoldAdmissionUntil(t *testing.T) {
	metrics, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	s := NewServer(ServerOptions{MaxConversionBytes: 4096}, nil, metrics)
	s.RegisterConversion("/convert", "things-convert", testConvert)
	s.Register("/validate", "things-validate", HandlerFunc(func(context.Context, Request) Response { return Allowed("") }))
	var open atomic.Bool
	s.HoldAdmissionUntil(open.Load)
	post := func(path string, body []byte) int {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		return rec.Code
	}
	admission := review(t, admissionv1.Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	conv := conversionReview("example.com/v1beta1", object("example.com/v1alpha1", "a", map[string]any{"old": "x"}))
	assert.Equal(t, http.StatusServiceUnavailable, post("/validate", admission), "admission held while the caches sync")
	assert.Equal(t, http.StatusOK, post("/convert", conv), "conversion served at once")
	open.Store(true)
	assert.Equal(t, http.StatusOK, post("/validate", admission))
}
