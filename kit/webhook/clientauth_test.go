package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// testCA signs client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client returns a client certificate for cn signed by ca.
func (ca *testCA) client(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A forged AdmissionReview — any caller that reaches the port without the
// API server's client certificate — is refused in the TLS handshake, before
// a handler runs: no certificate, one from another CA, one from the right
// CA for another identity. The API server's certificate is served; a
// rotated CA file is picked up without a restart.
func TestForgedReviewIsRefused(t *testing.T) {
	certs, pool := newStaticCerts(t)
	apiCA, otherCA := newTestCA(t, "api-client-ca"), newTestCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, apiCA.pem, 0o600))

	var handled atomic.Int32
	auth := &ClientAuth{CAFile: caFile, Names: []string{"kube-apiserver-webhook-client"}}
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0", ClientAuth: auth}, certs, nil)
	s.Register("/validate", "guard", HandlerFunc(func(context.Context, Request) Response {
		handled.Add(1)
		return Allowed()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)

	post := func(certs ...tls.Certificate) (int, error) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "w.ns.svc", Certificates: certs}}}
		defer client.CloseIdleConnections()
		resp, err := client.Post("https://"+s.Addr()+"/validate", "application/json",
			bytes.NewReader(review(t, admissionv1.Delete, &corev1.Pod{})))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	for name, cert := range map[string][]tls.Certificate{
		"no certificate":      nil,
		"another CA":          {otherCA.client(t, "kube-apiserver-webhook-client")},
		"another identity":    {apiCA.client(t, "system:serviceaccount:tenant:default")},
		"self-signed CA cert": {otherCA.client(t, "api-client-ca")},
	} {
		_, err := post(cert...)
		assert.Error(t, err, name)
	}
	assert.Zero(t, handled.Load(), "no forged review reached the handler")

	code, err := post(apiCA.client(t, "kube-apiserver-webhook-client"))
	require.NoError(t, err, "the API server's certificate")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, int32(1), handled.Load())

	// A rotated CA file (the bundle now also holds otherCA) is re-read.
	require.NoError(t, os.WriteFile(caFile, append(append([]byte{}, apiCA.pem...), otherCA.pem...), 0o600))
	later := time.Now().Add(2 * time.Hour) // a different modification time than the first write
	require.NoError(t, os.Chtimes(caFile, later, later))
	auth.mu.Lock()
	auth.checked = time.Time{} // do not wait reloadEvery
	auth.mu.Unlock()
	code, err = post(otherCA.client(t, "kube-apiserver-webhook-client"))
	require.NoError(t, err, "certificate of the added CA")
	assert.Equal(t, http.StatusOK, code)

	cancel()
	require.NoError(t, <-done)
}

// A caller that opens a connection and never finishes its request (or
// never sends one) is disconnected after the read timeout instead of
// holding a connection and a goroutine forever.
func TestServerTimesOutSlowCallers(t *testing.T) {
	certs, pool := newStaticCerts(t)
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0", ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}, certs, nil)
	s.Register("/ok", "ok", HandlerFunc(func(context.Context, Request) Response { return Allowed() }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)

	conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, ServerName: "w.ns.svc"})
	require.NoError(t, err)
	defer conn.Close()
	// Headers promise a body that never comes.
	_, err = conn.Write([]byte("POST /ok HTTP/1.1\r\nHost: w\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	start := time.Now()
	buf := make([]byte, 4096)
	for {
		_, err = conn.Read(buf)
		if err != nil {
			break
		}
	}
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closed the connection before the client's 5 s deadline: %v", err)
	assert.Less(t, time.Since(start), 4*time.Second)
}

// A server that also serves CRD conversion accepts a handshake without a
// client certificate (the API server presents none to conversion
// webhooks), and only the conversion path answers it: an admission path
// refuses it with 403 before its handler runs. A certificate that is
// presented must still be the API server's, on every path.
func TestConversionNeedsNoClientCertificate(t *testing.T) {
	certs, pool := newStaticCerts(t)
	apiCA, otherCA := newTestCA(t, "api-client-ca"), newTestCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, apiCA.pem, 0o600))

	var handled atomic.Int32
	auth := &ClientAuth{CAFile: caFile, Names: []string{"kube-apiserver-webhook-client"}}
	s := NewServer(ServerOptions{BindAddress: "127.0.0.1:0", ClientAuth: auth}, certs, nil)
	s.Register("/validate", "guard", HandlerFunc(func(context.Context, Request) Response {
		handled.Add(1)
		return Allowed()
	}))
	s.RegisterConversion(ConversionPath, "convert", testConvert)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 5*time.Second, 5*time.Millisecond)

	post := func(path string, body []byte, certs ...tls.Certificate) (int, error) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "w.ns.svc", Certificates: certs}}}
		defer client.CloseIdleConnections()
		resp, err := client.Post("https://"+s.Addr()+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	admission := review(t, admissionv1.Delete, &corev1.Pod{})
	conversion := conversionReview("example.com/v1beta1", object("example.com/v1alpha1", "a", map[string]any{"old": "x"}))

	code, err := post(ConversionPath, conversion)
	require.NoError(t, err, "conversion without a certificate")
	assert.Equal(t, http.StatusOK, code)
	code, err = post("/validate", admission)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "admission without a certificate")
	// A certificate of another CA is not even sent (the server names the CAs
	// it accepts, and the client has none of theirs): the caller is
	// anonymous, refused by the admission path.
	code, err = post("/validate", admission, otherCA.client(t, "kube-apiserver-webhook-client"))
	assert.True(t, err != nil || code == http.StatusForbidden, "admission, another CA: %d %v", code, err)
	// One of the right CA for another identity fails the handshake, on every path.
	other := apiCA.client(t, "system:serviceaccount:tenant:default")
	_, err = post("/validate", admission, other)
	assert.Error(t, err, "admission, another identity")
	_, err = post(ConversionPath, conversion, other)
	assert.Error(t, err, "conversion, another identity")
	assert.Zero(t, handled.Load(), "no forged review reached the admission handler")
	code, err = post("/validate", admission, apiCA.client(t, "kube-apiserver-webhook-client"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, int32(1), handled.Load())

	cancel()
	require.NoError(t, <-done)
}
