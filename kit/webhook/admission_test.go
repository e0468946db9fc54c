package webhook

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodCreation hands over the pod of a pod creation, in the request's namespace when the object names none, and
// answers every other request itself: allowed unchanged, or an error for an object that does not decode.
func TestPodCreation(t *testing.T) {
	req := func(op admissionv1.Operation, sub, raw string) Request {
		return Request{admissionv1.AdmissionRequest{UID: "u", Operation: op, SubResource: sub, Namespace: "ns",
			Object: runtime.RawExtension{Raw: []byte(raw)}}}
	}
	pod, _, ok := PodCreation(req(admissionv1.Create, "", `{"metadata":{"generateName":"web-"}}`))
	require.True(t, ok)
	assert.Equal(t, "ns", pod.Namespace, "the request's namespace")
	assert.Equal(t, "web-", pod.GenerateName)

	pod, _, ok = PodCreation(req(admissionv1.Create, "", `{"metadata":{"name":"p","namespace":"other"}}`))
	require.True(t, ok)
	assert.Equal(t, "other", pod.Namespace, "the object's own namespace stays")

	for _, tc := range []struct {
		name    string
		req     Request
		allowed bool
		code    int32
	}{
		{"an update", req(admissionv1.Update, "", `{}`), true, 0},
		{"a binding", req(admissionv1.Create, "binding", `{}`), true, 0},
		{"undecodable", req(admissionv1.Create, "", `{"metadata":`), false, http.StatusBadRequest},
		{"no object", req(admissionv1.Create, "", ``), false, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, resp, ok := PodCreation(tc.req)
			assert.False(t, ok)
			assert.Nil(t, pod)
			assert.Equal(t, tc.allowed, resp.Allowed)
			if !tc.allowed {
				require.NotNil(t, resp.Result)
				assert.Equal(t, tc.code, resp.Result.Code)
			}
		})
	}
}
