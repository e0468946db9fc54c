package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func crdConverting(name string, strategy apiextensionsv1.ConversionStrategyType, ns, svc string, port int32, bundle string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: strategy}
	if strategy == apiextensionsv1.WebhookConverter {
		path := "/convert"
		crd.Spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte(bundle),
				Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: svc, Path: &path, Port: &port}}}
	}
	return crd
}

// The keeper's decisions on the DaemonSet CRD's stanza (the SidecarSet CRD is absent: nothing to do for it).
func TestKeeperSync(t *testing.T) {
	const ds = "daemonsets.apps.kruise.io"
	existing := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "daemonset-controller-webhook"}}
	for _, tc := range []struct {
		name        string
		crd         *apiextensionsv1.CustomResourceDefinition
		kube        []runtime.Object
		wantNS      string
		wantBundle  string
		wantRewrite bool
	}{
		{name: "local stanza, stale CA: the CA is written",
			crd:    crdConverting(ds, apiextensionsv1.WebhookConverter, "flotilla-local", "daemonset-controller-webhook", 19445, "old"),
			wantNS: "flotilla-local", wantBundle: "local-ca", wantRewrite: true},
		{name: "local stanza, right CA: unchanged",
			crd:    crdConverting(ds, apiextensionsv1.WebhookConverter, "flotilla-local", "daemonset-controller-webhook", 19445, "local-ca"),
			wantNS: "flotilla-local", wantBundle: "local-ca"},
		{name: "installed controllers' stanza, their Service exists: left to them",
			crd:    crdConverting(ds, apiextensionsv1.WebhookConverter, "flotilla-system", "daemonset-controller-webhook", 19445, "theirs"),
			kube:   []runtime.Object{existing},
			wantNS: "flotilla-system", wantBundle: "theirs"},
		{name: "shipped stanza, its Service gone (uninstalled): pointed at the local endpoint",
			crd:    crdConverting(ds, apiextensionsv1.WebhookConverter, "flotilla-system", "daemonset-controller-webhook", 19445, "theirs"),
			wantNS: "flotilla-local", wantBundle: "local-ca", wantRewrite: true},
		{name: "another product's stanza, its Service missing: left alone",
			crd:    crdConverting(ds, apiextensionsv1.WebhookConverter, "kruise-system", "kruise-webhook-service", 443, "kruise"),
			wantNS: "kruise-system", wantBundle: "kruise"},
		{name: "strategy None: left alone",
			crd: crdConverting(ds, apiextensionsv1.NoneConverter, "", "", 0, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			kube := fake.NewClientset(tc.kube...)
			ext := extfake.NewClientset(tc.crd)
			k := &keeper{kube: kube, ext: ext, namespace: "flotilla-local", adopt: "flotilla-system", ip: "192.0.2.7", port: 19446,
				bundle: func() []byte { return []byte("local-ca") }}
			require.NoError(t, k.sync(ctx))

			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, ds, metav1.GetOptions{})
			require.NoError(t, err)
			patched := false
			for _, a := range ext.Actions() {
				patched = patched || a.GetVerb() == "patch"
			}
			assert.Equal(t, tc.wantRewrite, patched, "CRD written")
			if tc.wantNS == "" {
				assert.Equal(t, tc.crd.Spec.Conversion, got.Spec.Conversion)
			} else {
				cc := got.Spec.Conversion.Webhook.ClientConfig
				assert.Equal(t, tc.wantNS, cc.Service.Namespace)
				assert.Equal(t, tc.wantBundle, string(cc.CABundle))
				assert.Equal(t, "/convert", *cc.Service.Path)
				if tc.wantNS == "flotilla-local" {
					assert.Equal(t, "daemonset-controller-webhook", cc.Service.Name)
					assert.Equal(t, int32(19445), *cc.Service.Port)
				}
			}

			// The Services and Endpoints in flotilla-local, whatever the stanza.
			for _, tg := range targets {
				svc, err := kube.CoreV1().Services("flotilla-local").Get(ctx, tg.service, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Empty(t, svc.Spec.Selector)
				assert.Equal(t, tg.port, svc.Spec.Ports[0].Port)
				assert.Equal(t, int32(19446), svc.Spec.Ports[0].TargetPort.IntVal)
				eps, err := kube.CoreV1().Endpoints("flotilla-local").Get(ctx, tg.service, metav1.GetOptions{}) //nolint:staticcheck
				require.NoError(t, err)
				assert.Equal(t, "192.0.2.7", eps.Subsets[0].Addresses[0].IP)
				assert.Equal(t, int32(19446), eps.Subsets[0].Ports[0].Port)
				assert.Equal(t, svc.Spec.Ports[0].Name, eps.Subsets[0].Ports[0].Name, "the API server pairs them by port name")
			}
		})
	}
}

// Drift is repaired at the next pass: deleted Endpoints come back.
func TestKeeperRepairsDrift(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	k := &keeper{kube: kube, ext: extfake.NewClientset(), namespace: "flotilla-local", ip: "192.0.2.7", port: 19446,
		bundle: func() []byte { return []byte("local-ca") }}
	require.NoError(t, k.sync(ctx))
	require.NoError(t, kube.CoreV1().Endpoints("flotilla-local").Delete(ctx, "sidecarset-controller-conversion", metav1.DeleteOptions{})) //nolint:staticcheck
	require.NoError(t, k.sync(ctx))
	_, err := kube.CoreV1().Endpoints("flotilla-local").Get(ctx, "sidecarset-controller-conversion", metav1.GetOptions{}) //nolint:staticcheck
	require.NoError(t, err)
}

// The SidecarSet CRD converts through Service sidecarset-controller-conversion (issue 23: the admission Service
// holds Ready pods only, and a replica's readiness needs conversion): the keeper serves behind that name, and a
// local stanza still naming sidecarset-controller-webhook (a CRD applied before the change) is pointed at it,
// port and path kept.
func TestKeeperSidecarSetConversionService(t *testing.T) {
	const ss = "sidecarsets.apps.kruise.io"
	ctx := context.Background()
	kube := fake.NewClientset()
	ext := extfake.NewClientset(crdConverting(ss, apiextensionsv1.WebhookConverter, "flotilla-local", "sidecarset-controller-webhook", 19443, "old"))
	k := &keeper{kube: kube, ext: ext, namespace: "flotilla-local", adopt: "flotilla-system", ip: "192.0.2.7", port: 19446,
		bundle: func() []byte { return []byte("local-ca") }}
	require.NoError(t, k.sync(ctx))
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, ss, metav1.GetOptions{})
	require.NoError(t, err)
	cc := got.Spec.Conversion.Webhook.ClientConfig
	assert.Equal(t, "flotilla-local", cc.Service.Namespace)
	assert.Equal(t, "sidecarset-controller-conversion", cc.Service.Name)
	assert.Equal(t, int32(19443), *cc.Service.Port)
	assert.Equal(t, "/convert", *cc.Service.Path)
	assert.Equal(t, "local-ca", string(cc.CABundle))
	_, err = kube.CoreV1().Endpoints("flotilla-local").Get(ctx, "sidecarset-controller-conversion", metav1.GetOptions{}) //nolint:staticcheck
	require.NoError(t, err)
}
