package webhook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
)

func TestOptions(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o := DefaultOptions("x-controller")
	assert.Equal(t, Options{Port: 9443, SecretName: "x-controller-webhook-certs", Namespace: "flotilla-system",
		ServiceName: "x-controller-webhook", ShutdownDelay: 3 * time.Second}, o)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--webhook-port=1234", "--webhook-cert-dir=/certs", "--webhook-host=127.0.0.1"}))
	assert.Equal(t, 1234, o.Port)
	assert.Equal(t, "/certs", o.CertDir)
	require.NoError(t, o.Validate())
	o.Port = 70000
	assert.Error(t, o.Validate())
	o = DefaultOptions("x")
	o.SecretName = ""
	assert.Error(t, o.Validate(), "self-managed certificates need a Secret")
	o.Disabled = true
	assert.NoError(t, o.Validate())

	d := DefaultOptions("x-controller")
	p := d.CertPolicy()
	assert.Contains(t, p.DNSNames, "x-controller-webhook.flotilla-system.svc")
	assert.Contains(t, p.DNSNames, "x-controller-webhook.flotilla-system.svc.cluster.local")
	assert.Equal(t, "127.0.0.1", p.IPs[0].String())
	assert.NotContains(t, p.DNSNames, "x-controller-conversion.flotilla-system.svc")
}

// --webhook-conversion-service-name (issue 23): the serving certificate
// covers the conversion Service's names as well as the webhook Service's
// (the API server checks the name it dials), and ServeConversion writes it
// into the CRD's stanza; unset, both are the webhook Service.
func TestConversionServiceName(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantSvc string
	}{
		{nil, "x-controller-webhook"},
		{[]string{"--webhook-conversion-service-name=x-controller-conversion"}, "x-controller-conversion"},
	} {
		o := DefaultOptions("x-controller")
		o.Namespace = "ns"
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(tc.args))
		p := o.CertPolicy()
		for _, svc := range []string{"x-controller-webhook", tc.wantSvc} {
			for _, n := range []string{svc + ".ns.svc", svc + ".ns.svc.cluster.local", svc + ".ns"} {
				assert.Contains(t, p.DNSNames, n, "%v", tc.args)
			}
		}
		assert.Len(t, p.DNSNames, len(slices.Compact(slices.Sorted(slices.Values(p.DNSNames)))), "no name twice")

		c, err := New(o, fake.NewClientset(), prometheus.NewRegistry(), nil)
		require.NoError(t, err)
		c.ServeConversion(nil, "x-controller", "x-convert", func(*unstructured.Unstructured, string) error { return nil }, "xs.example.com")
		require.NotNil(t, c.Conversion)
		assert.Equal(t, ConversionService{Namespace: "ns", Name: tc.wantSvc, Path: ConversionPath, Port: 443}, c.Conversion.Service, "%v", tc.args)
		port := int32(19443)
		cur := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "flotilla-system", Name: "x-controller-webhook", Port: &port}}}}
		want, changed := PlanConversion(cur, c.Conversion.Service, []byte("ca"))
		assert.True(t, changed)
		assert.Equal(t, tc.wantSvc, want.Webhook.ClientConfig.Service.Name, "%v", tc.args)
		assert.Equal(t, "ns", want.Webhook.ClientConfig.Service.Namespace)
		assert.Equal(t, port, *want.Webhook.ClientConfig.Service.Port, "the manifest's port is kept")
	}
}

// The component with external certificates: it serves the files, injects
// their ca.crt into its configurations and reports ready once serving.
func TestComponentWithCertDir(t *testing.T) {
	dir := t.TempDir()
	data, _, err := PlanCerts(time.Now(), nil, testPolicy)
	require.NoError(t, err)
	for _, k := range []string{KeyTLSCert, KeyTLSKey, KeyCACert} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), data[k], 0o600))
	}
	client := fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "w"}}})
	c, err := New(Options{Host: "127.0.0.1", Port: 0, CertDir: dir}, client, prometheus.NewRegistry(), nil, ConfigRef{Kind: Mutating, Name: "cfg"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Eventually(t, func() bool { return c.Ready() == nil }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, data[KeyCACert], c.CABundle())
	require.Eventually(t, func() bool {
		m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
		return err == nil && string(m.Webhooks[0].ClientConfig.CABundle) == string(data[KeyCACert])
	}, 5*time.Second, 10*time.Millisecond, "the caBundle was injected")
	rc := c.ReplicaComponent()
	assert.Equal(t, "webhook", rc.Name)
	assert.NoError(t, rc.Ready())
	cancel()
	require.NoError(t, <-done)
}

// --webhook-external-crd-conversion: conversion is served, the CRDs' stanza is
// left to whoever keeps it (hack/cluster/local-convert.sh); without it the
// component keeps the stanza (CRDConversion).
func TestServeConversionExternalStanza(t *testing.T) {
	for _, external := range []bool{false, true} {
		o := DefaultOptions("x-controller")
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		o.AddFlags(fs)
		var args []string
		if external {
			args = []string{"--webhook-external-crd-conversion"}
		}
		require.NoError(t, fs.Parse(args))
		o.CertDir = t.TempDir()
		c, err := New(o, fake.NewClientset(), prometheus.NewRegistry(), nil)
		require.NoError(t, err)
		c.ServeConversion(nil, "x-controller", "x-convert", func(*unstructured.Unstructured, string) error { return nil }, "xs.example.com")
		assert.Contains(t, c.Server.Paths(), ConversionPath, "external=%v: conversion served", external)
		assert.Equal(t, external, c.Conversion == nil, "external=%v: stanza kept by the component", external)
	}
}
