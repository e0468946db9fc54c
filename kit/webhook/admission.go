package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request is one admission request as the API server sent it.
type Request struct {
	admissionv1.AdmissionRequest
}

// DecodeObject unmarshals the request's object (CREATE, UPDATE) into into.
func (r Request) DecodeObject(into any) error { return r.decode(r.Object.Raw, "object", into) }

// DecodeNamespacedObject unmarshals the request's object as DecodeObject does and gives it the request's namespace
// when it carries none: a client may leave metadata.namespace out of what it creates in a namespace.
func (r Request) DecodeNamespacedObject(into metav1.Object) error {
	if err := r.DecodeObject(into); err != nil {
		return err
	}
	if into.GetNamespace() == "" {
		into.SetNamespace(r.Namespace)
	}
	return nil
}

// PodCreation decodes the pod of a pod creation (DecodeNamespacedObject). ok is false for any other request (another
// operation, a subresource such as a binding) and for an object that does not decode; resp is then the answer:
// allowed unchanged, or the decoding error.
func PodCreation(req Request) (pod *corev1.Pod, resp Response, ok bool) {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return nil, Allowed(), false
	}
	pod = &corev1.Pod{}
	if err := req.DecodeNamespacedObject(pod); err != nil {
		return nil, Errored(http.StatusBadRequest, err), false
	}
	return pod, Response{}, true
}

// DecodeOldObject unmarshals the request's old object (UPDATE, DELETE).
func (r Request) DecodeOldObject(into any) error {
	return r.decode(r.OldObject.Raw, "old object", into)
}

// decode unmarshals raw, the request's object named what, into into.
func (r Request) decode(raw []byte, what string, into any) error {
	if len(raw) == 0 {
		return fmt.Errorf("admission request %s has no %s", r.UID, what)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decode %s of admission request %s: %w", what, r.UID, err)
	}
	return nil
}

// DryRun reports whether the request must have no side effects.
func (r Request) IsDryRun() bool { return r.DryRun != nil && *r.DryRun }

// Response is a handler's decision.
type Response struct {
	Allowed bool
	// Result carries the message and code of a denial or an error.
	Result *metav1.Status
	// Patch is a JSON patch (RFC 6902) to the request's object; only for
	// mutating webhooks.
	Patch []byte
	// Warnings are shown to the client (kubectl prints them).
	Warnings []string
	// errored marks a response that reports a failure of the webhook
	// itself rather than a decision (metrics count it as an error).
	errored bool
}

// Allowed admits the request unchanged.
func Allowed(warnings ...string) Response { return Response{Allowed: true, Warnings: warnings} }

// Denied rejects the request with a message that names what is wrong; the
// API server shows it to the client as is.
func Denied(format string, args ...any) Response {
	return Response{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: fmt.Sprintf(format, args...),
	}}
}

// Invalid rejects the request as an invalid object (HTTP 422), the way the
// API server reports its own validation errors.
func Invalid(message string) Response {
	return Response{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: message,
	}}
}

// Errored reports that the webhook could not decide: code 400 for a request
// it cannot read (answered as a rejection), 500 and above for its own
// failures (a lister error, a panic, a budget write that keeps conflicting).
// Those the server answers with HTTP 500 instead of an AdmissionReview, so
// the API server treats the call as failed and applies the configuration's
// failurePolicy: Fail rejects, Ignore admits. The webhook does not override
// the operator's choice by answering "denied".
func Errored(code int32, err error) Response {
	return Response{errored: true, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: err.Error(),
	}}
}

// Patched admits the request with the JSON patch turning original (the
// request's raw object) into mutated; with nothing to change it is Allowed.
func Patched(original []byte, mutated any, warnings ...string) Response {
	after, err := json.Marshal(mutated)
	if err != nil {
		return Errored(http.StatusInternalServerError, fmt.Errorf("encode mutated object: %w", err))
	}
	patch, err := CreatePatch(original, after)
	if err != nil {
		return Errored(http.StatusInternalServerError, err)
	}
	r := Allowed(warnings...)
	if len(patch) > 0 {
		r.Patch = patch
	}
	return r
}

// result classifies a response for the metrics.
func (r Response) result() string {
	switch {
	case r.errored:
		return "error"
	case r.Allowed:
		return "allowed"
	default:
		return "denied"
	}
}

// Handler decides admission requests of one path.
type Handler interface {
	Handle(ctx context.Context, req Request) Response
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req Request) Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request) Response { return f(ctx, req) }
