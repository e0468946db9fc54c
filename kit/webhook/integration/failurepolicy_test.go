// Package integration calls kit/webhook's server from the real API server of the local control plane.
package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/webhook"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A webhook that fails (its handler errors with 500, e.g. a lister error, or panics) does not answer "denied": the
// API server sees a failed call and applies the configuration's failurePolicy — Fail rejects the request, Ignore
// admits it. A decision (Denied) is enforced whatever the policy.
func TestInternalErrorsFollowFailurePolicy(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	certs, caBundle := serverCerts(t)
	s := webhook.NewServer(webhook.ServerOptions{BindAddress: "127.0.0.1:0"}, certs, nil)
	calls := map[string]*atomic.Int64{"/fail": {}, "/panic": {}, "/deny": {}}
	counted := func(path string, h func() webhook.Response) webhook.Handler {
		return webhook.HandlerFunc(func(context.Context, webhook.Request) webhook.Response { calls[path].Add(1); return h() })
	}
	s.Register("/fail", "fail", counted("/fail", func() webhook.Response {
		return webhook.Errored(http.StatusInternalServerError, errors.New("lister not synced"))
	}))
	s.Register("/panic", "panic", counted("/panic", func() webhook.Response { panic("boom") }))
	s.Register("/deny", "deny", counted("/deny", func() webhook.Response { return webhook.Denied("data.x: not allowed here") }))
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()
	testenv.Eventually(t, 10*time.Second, func() (bool, error) { return s.Ready() == nil, nil })

	cases := []struct {
		path   string
		policy admissionregistrationv1.FailurePolicyType
		want   string // "" admitted, else a part of the error
	}{
		{"/fail", admissionregistrationv1.Fail, "failed calling webhook"},
		{"/fail", admissionregistrationv1.Ignore, ""},
		{"/panic", admissionregistrationv1.Fail, "failed calling webhook"},
		{"/panic", admissionregistrationv1.Ignore, ""},
		{"/deny", admissionregistrationv1.Ignore, "data.x: not allowed here"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s %s", strings.TrimPrefix(c.path, "/"), c.policy), func(t *testing.T) {
			name := fmt.Sprintf("%s-%d", ns, i)
			register(t, env, name, ns, "https://"+s.Addr()+c.path, caBundle, c.policy)
			// The configuration takes effect once the API server's informer has it: poll with dry-run creates until
			// one of them called the webhook, and judge that one.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: ns, Labels: map[string]string{"webhook": name}}}
			var err error
			testenv.Eventually(t, 30*time.Second, func() (bool, error) {
				before := calls[c.path].Load()
				_, err = env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return calls[c.path].Load() > before, nil
			})
			if c.want == "" {
				assert.NoError(t, err, "failurePolicy Ignore admits a request the webhook failed on")
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
			}
		})
	}
}

// serverCerts writes a CA and a serving certificate for 127.0.0.1 (kit/webhook's policy) to a directory and loads
// them as a FileCerts; it returns the CA bundle for the webhook configuration.
func serverCerts(t *testing.T) (*webhook.FileCerts, []byte) {
	t.Helper()
	data, _, err := webhook.PlanCerts(time.Now(), nil, (&webhook.Options{ServiceName: "w", Namespace: "ns"}).CertPolicy())
	require.NoError(t, err)
	dir := t.TempDir()
	for _, k := range []string{webhook.KeyTLSCert, webhook.KeyTLSKey, webhook.KeyCACert} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), data[k], 0o600))
	}
	certs := webhook.NewFileCerts(dir)
	require.NoError(t, certs.Ensure(context.Background()))
	return certs, data[webhook.KeyCACert]
}

// register creates a validating configuration calling url for CREATEs of ConfigMaps labelled webhook=name in ns,
// removed when the test ends.
func register(t *testing.T, env *testenv.Env, name, ns, url string, caBundle []byte, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "configmaps.test.flotilla.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           &policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"webhook": name}},
		}},
	}
	client := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_, err := client.Create(context.Background(), cfg, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}
