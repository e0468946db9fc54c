package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/webhook"
)

// clusterDir is the control plane's CLUSTER_DIR: the private cluster's, or
// the directory of FLOTILLA_KUBECONFIG (<repo>/.cluster/kubeconfig).
func clusterDir(env *testenv.Env) string {
	if env.ClusterDir != "" {
		return env.ClusterDir
	}
	return filepath.Dir(env.KubeconfigPath)
}

// Issue 26 item 7 through the real API server: a webhook server that
// requires the API server's client certificate (--webhook-client-ca, as
// hack/cluster/up.sh configures the API server to present one) is called
// by the API server, while a forged review sent straight to it by any
// other client — without a certificate, or with the cluster's admin
// certificate — is refused in the handshake and reaches no handler.
func TestOnlyTheAPIServerIsServed(t *testing.T) {
	env := testenv.Get(t)
	dir := clusterDir(env)
	caFile := filepath.Join(dir, "pki", "webhook-client-ca.crt")
	if _, err := os.Stat(filepath.Join(dir, "admission", "config.yaml")); err != nil {
		t.Skipf("this control plane was started without the webhook client certificate (no %s/admission/config.yaml): restart it with hack/cluster/up.sh", dir)
	}
	ns := env.Namespace(t)
	certs, caBundle := serverCerts(t)
	s := webhook.NewServer(webhook.ServerOptions{BindAddress: "127.0.0.1:0",
		ClientAuth: &webhook.ClientAuth{CAFile: caFile, Names: []string{"kube-apiserver-webhook-client"}}}, certs, nil)
	var calls atomic.Int64
	s.Register("/deny", "deny", webhook.HandlerFunc(func(context.Context, webhook.Request) webhook.Response {
		calls.Add(1)
		return webhook.Denied("data.x: refused by the authenticated webhook")
	}))
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()
	testenv.Eventually(t, 10*time.Second, func() (bool, error) { return s.Ready() == nil, nil })

	// The API server's call: with failurePolicy Ignore a refused handshake
	// would admit the ConfigMap, so a denial proves the call got through.
	register(t, env, ns, ns, "https://"+s.Addr()+"/deny", caBundle, admissionregistrationv1.Ignore)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: ns, Labels: map[string]string{"webhook": ns}}}
	var err error
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err = env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return calls.Load() > 0, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused by the authenticated webhook")
	served := calls.Load()

	// A forged review from a client in the cluster's network.
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caBundle))
	admin, err := tls.X509KeyPair(env.Config.CertData, env.Config.KeyData)
	require.NoError(t, err)
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "the cluster admin's certificate": {admin}} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: certs}}}
		_, err := client.Post("https://"+s.Addr()+"/deny", "application/json", bytes.NewReader([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x"}}`)))
		assert.Error(t, err, name)
		client.CloseIdleConnections()
	}
	assert.Equal(t, served, calls.Load(), "no forged review reached the handler")
}
