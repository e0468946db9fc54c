package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// Issue 11 §1: a webhook serves on every replica, not only the leader. Two
// sidecarset-controller replicas: both are ready (a standby of a binary
// without webhooks is not), both answer AdmissionReviews over TLS with the
// same certificate (one Secret for all replicas), trusted by the CA bundle
// in that Secret; one holds the Lease.
func TestWebhookServesOnEveryReplica(t *testing.T) {
	env := testenv.Get(t)
	f := newFleet(t, env)
	ports := framework.FreePorts(t, 2)
	var procs []*framework.Process
	for _, port := range ports {
		procs = append(procs, f.start(t, "sidecarset", "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port)))
	}
	for _, p := range procs {
		testenv.Eventually(t, time.Minute, func() (bool, error) { return p.Status("/readyz") == 200 || !p.Running(), nil })
		require.True(t, p.Running(), "process exited; log:\n%s", p.Log())
	}
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		holder, err := f.leaseHolder("sidecarset")
		return holder != "", err
	})

	sec, err := env.Kube.CoreV1().Secrets(framework.SystemNamespace).Get(context.Background(), "sidecarset-controller-webhook-certs", metav1.GetOptions{})
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(sec.Data["ca.crt"]))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	review := []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u1","operation":"CREATE",` +
		`"namespace":"` + f.ns + `","resource":{"version":"v1","resource":"pods"},"object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a"}]}}}}`)
	var served [][]byte
	for i, port := range ports {
		resp, err := client.Post(fmt.Sprintf("https://127.0.0.1:%d/mutate-pod", port), "application/json", bytes.NewReader(review))
		require.NoError(t, err, "replica %d", i)
		var out admissionv1.AdmissionReview
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		_ = resp.Body.Close()
		require.NotNil(t, out.Response)
		assert.True(t, out.Response.Allowed, "replica %d: a pod no SidecarSet selects is allowed unchanged", i)
		assert.Equal(t, "u1", string(out.Response.UID))
		served = append(served, resp.TLS.PeerCertificates[0].Raw)
	}
	assert.Equal(t, served[0], served[1], "every replica serves the certificate of the shared Secret")
}
