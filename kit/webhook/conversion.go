package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ConvertFunc converts obj in place to toAPIVersion (group/version, as the
// API server asks: "apps.kruise.io/v1beta1"), setting its apiVersion. An
// error says why the object cannot be represented at that version and
// should name the field ("spec.foo: no v1alpha1 equivalent"): it is shown
// to the client whose read or write needed the conversion.
type ConvertFunc func(obj *unstructured.Unstructured, toAPIVersion string) error

// DefaultMaxConversionBytes bounds a ConversionReview body. Unlike an
// admission review (one object), the API server sends every object of a
// list response that needs converting in one review, so the bound is a list
// page, not an object: 64 MiB is about 6,000 DaemonSets of 10 KiB. A
// larger list at a non-storage version fails; paginated lists (informers,
// kubectl) convert page by page.
const DefaultMaxConversionBytes = 64 << 20

// RegisterConversion serves CRD conversion (ConversionReview v1) on path
// under name (the metrics' webhook label, e.g. "daemonset-convert").
// Metrics: webhook_requests_total{webhook=name,result} with result
// converted, failed (convert refused an object: the client sees the
// message) or error (an unreadable review), and
// webhook_request_duration_seconds{webhook=name}.
//
// The API server presents no client certificate to a conversion webhook,
// so with ServerOptions.ClientAuth this path accepts callers without one
// (the admission paths still require it, see tlsConfig). Nothing is lost:
// conversion is a pure function of the objects the caller sends, with no
// side effect and nothing to read; the body bound and the server's
// timeouts limit what a caller can make it spend.
func (s *Server) RegisterConversion(path, name string, convert ConvertFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimPath(path, name)
	s.conversion = true
	limit := s.opts.MaxConversionBytes
	if limit <= 0 {
		limit = DefaultMaxConversionBytes
	}
	s.mux.Handle(path, &conversionHandler{name: name, convert: convert, metrics: s.metrics, clock: s.opts.Clock, maxBytes: limit})
}

// conversionHandler answers ConversionReviews with convert.
type conversionHandler struct {
	name     string
	convert  ConvertFunc
	metrics  *Metrics
	clock    clock.PassiveClock
	maxBytes int64
}

// Conversion results (metrics label result).
const (
	resultConverted = "converted"
	resultFailed    = "failed"
	resultError     = "error"
)

func (h *conversionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.clock.Now()
	logger := klog.FromContext(r.Context()).WithValues("webhook", h.name)
	code, review, result := h.review(r)
	h.metrics.requests.WithLabelValues(h.name, result).Inc()
	h.metrics.latency.WithLabelValues(h.name).Observe(h.clock.Since(start).Seconds())
	if code != http.StatusOK {
		// Not a review we can answer: the API server reports a failed call.
		logger.Error(nil, "Conversion request refused", "code", code, "message", review.Response.Result.Message)
		http.Error(w, review.Response.Result.Message, code)
		return
	}
	resp := review.Response
	if result == resultFailed {
		logger.Info("Conversion refused", "uid", resp.UID, "message", resp.Result.Message)
	} else if v := logger.V(4); v.Enabled() {
		v.Info("Conversion answered", "uid", resp.UID, "objects", len(resp.ConvertedObjects))
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(review); err != nil {
		logger.Error(err, "Cannot write conversion response")
	}
}

// review reads and answers one ConversionReview: an HTTP status other than
// 200 for a request that is not one, else the review with its response.
func (h *conversionHandler) review(r *http.Request) (code int, out *apiextensionsv1.ConversionReview, result string) {
	out = &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: &apiextensionsv1.ConversionResponse{},
	}
	refuse := func(code int, err error) (int, *apiextensionsv1.ConversionReview, string) {
		out.Response.Result = metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: err.Error()}
		return code, out, resultError
	}
	if r.Method != http.MethodPost {
		return refuse(http.StatusMethodNotAllowed, fmt.Errorf("conversion reviews are POSTed, got %s", r.Method))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.maxBytes+1))
	if err != nil {
		return refuse(http.StatusBadRequest, fmt.Errorf("read conversion review: %w", err))
	}
	if int64(len(body)) > h.maxBytes {
		return refuse(http.StatusRequestEntityTooLarge, fmt.Errorf("conversion review larger than %d bytes: list with a smaller limit", h.maxBytes))
	}
	var in apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return refuse(http.StatusBadRequest, fmt.Errorf("decode conversion review: %w", err))
	}
	if in.Request == nil {
		return refuse(http.StatusBadRequest, errors.New("conversion review without a request"))
	}
	out.Response.UID = in.Request.UID
	converted, err := h.convertAll(in.Request.Objects, in.Request.DesiredAPIVersion)
	if err != nil {
		out.Response.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		return http.StatusOK, out, resultFailed
	}
	out.Response.ConvertedObjects = converted
	out.Response.Result = metav1.Status{Status: metav1.StatusSuccess}
	return http.StatusOK, out, resultConverted
}

// maxReportedFailures caps the objects a failed review's message lists.
const maxReportedFailures = 5

// convertAll converts every object on its own, in order (the API server
// matches answers to objects by position). The protocol has one result per
// review, so one object that cannot be converted fails the review; the
// message names each failing object and the reason convert gave.
func (h *conversionHandler) convertAll(objects []runtime.RawExtension, to string) ([]runtime.RawExtension, error) {
	want, err := schema.ParseGroupVersion(to)
	if err != nil || want.Group == "" || want.Version == "" {
		return nil, fmt.Errorf("desiredAPIVersion %q is not group/version", to)
	}
	out := make([]runtime.RawExtension, len(objects))
	var failures []string
	failed := 0
	for i, raw := range objects {
		conv, err := h.convertOne(raw.Raw, want)
		if err != nil {
			failed++
			if len(failures) < maxReportedFailures {
				failures = append(failures, err.Error())
			}
			continue
		}
		out[i] = runtime.RawExtension{Raw: conv}
	}
	if failed > 0 {
		msg := strings.Join(failures, "; ")
		if failed > len(failures) {
			msg += fmt.Sprintf("; and %d more", failed-len(failures))
		}
		return nil, errors.New(msg)
	}
	return out, nil
}

// convertOne converts one object, refusing a converter that changed what
// the API server forbids a conversion to change (it would reject the whole
// answer with a less helpful message).
func (h *conversionHandler) convertOne(raw []byte, want schema.GroupVersion) (out []byte, err error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	id := describe(obj)
	from, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return nil, fmt.Errorf("%s: apiVersion %q: %w", id, obj.GetAPIVersion(), err)
	}
	if from.Group != want.Group {
		return nil, fmt.Errorf("%s: cannot convert group %s to %s", id, from.Group, want.Group)
	}
	if from == want {
		return raw, nil
	}
	before := obj.DeepCopy()
	defer func() {
		// A converter bug answers a failed conversion, never a dead replica.
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%s: converting to %s panicked: %v", id, want, p)
		}
	}()
	if err := h.convert(obj, want.String()); err != nil {
		return nil, fmt.Errorf("%s: cannot convert to %s: %w", id, want, err)
	}
	if obj.GetAPIVersion() != want.String() {
		return nil, fmt.Errorf("%s: converter left apiVersion %q, want %s", id, obj.GetAPIVersion(), want)
	}
	if obj.GetKind() != before.GetKind() || obj.GetName() != before.GetName() ||
		obj.GetNamespace() != before.GetNamespace() || obj.GetUID() != before.GetUID() {
		return nil, fmt.Errorf("%s: converter changed kind, name, namespace or uid", id)
	}
	return obj.MarshalJSON()
}

// describe names an object in messages: Kind namespace/name (apiVersion).
func describe(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s (%s)", obj.GetKind(), name, obj.GetAPIVersion())
}
