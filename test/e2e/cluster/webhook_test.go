package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
)

const (
	denyLabel   = "flotilla.dev/deny"
	denyMessage = "denied by the flotilla e2e webhook"
)

// selfSignedTLS returns a server certificate for 127.0.0.1 and its PEM (its own CA bundle).
func selfSignedTLS(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")}, // Go verifies SANs, not the CN
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A validating webhook served by this test process at https://127.0.0.1:<port> is called by
// the API server and its denial (with message) reaches the client.
func TestAdmissionWebhookByURL(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()

	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if obj.Labels[denyLabel] == "true" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: denyMessage, Code: http.StatusForbidden}
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
	cert, caPEM := selfSignedTLS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	url := fmt.Sprintf("https://%s/validate", ln.Addr().String())
	cfgName := ns + "-deny" // cluster-scoped: unique per test namespace
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: cfgName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.e2e.flotilla.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](10),
			// Only this test's namespace: the cluster may be shared with other tests.
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
		}},
	}
	hooks := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_, err = hooks.Create(ctx, vwc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hooks.Delete(context.Background(), cfgName, metav1.DeleteOptions{}) })

	// The API server loads webhook configurations asynchronously: retry until the labelled
	// object is denied (an object admitted before that is removed again).
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	var denyErr error
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "denied-", Labels: map[string]string{denyLabel: "true"}}}, metav1.CreateOptions{})
		if err == nil {
			return false, cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: denyLabel})
		}
		denyErr = err
		return strings.Contains(err.Error(), denyMessage), nil
	})
	t.Logf("denied: %v", denyErr)
	assert.True(t, apierrors.IsForbidden(denyErr), "403 from the webhook, got %v", denyErr)
	assert.Contains(t, denyErr.Error(), `admission webhook "deny.e2e.flotilla.dev" denied the request`)

	before := calls.Load()
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed"}}, metav1.CreateOptions{})
	require.NoError(t, err, "an unlabelled object is admitted")
	assert.Greater(t, calls.Load(), before, "the webhook was called for the admitted object too")
}
