package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/webhook"
)

// A kind with two versions whose schemas differ, shaped like the OpenKruise
// kinds Flotilla stores at v1beta1: v1beta1 is the storage version, v1alpha1
// is served. v1alpha1 has spec.old; v1beta1 calls it spec.new and has
// spec.only, which v1alpha1 cannot hold (the converter refuses, naming it).
// Each test makes its own group, so nothing here touches the shared
// apps.kruise.io CRDs other tests run against.
type thingKind struct {
	group    string
	crd      string
	alpha    schema.GroupVersionResource
	beta     schema.GroupVersionResource
	crdsAPI  apiextensionsclient.Interface
	resource dynamic.NamespaceableResourceInterface
}

func newThingKind(t *testing.T, env *testenv.Env, conv *apiextensionsv1.CustomResourceConversion) *thingKind {
	t.Helper()
	return newThingKindStoredAt(t, env, conv, "v1beta1")
}

// newThingKindStoredAt is newThingKind with the storage version chosen.
func newThingKindStoredAt(t *testing.T, env *testenv.Env, conv *apiextensionsv1.CustomResourceConversion, storage string) *thingKind {
	t.Helper()
	ns := env.Namespace(t) // a unique name: the group is derived from it
	k := &thingKind{group: ns + ".conversion.test.flotilla.dev"}
	k.crd = "things." + k.group
	k.alpha = schema.GroupVersionResource{Group: k.group, Version: "v1alpha1", Resource: "things"}
	k.beta = schema.GroupVersionResource{Group: k.group, Version: "v1beta1", Resource: "things"}
	var err error
	k.crdsAPI, err = apiextensionsclient.NewForConfig(env.Config)
	require.NoError(t, err)
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	version := func(name string, storage bool, spec map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: spec},
				}}}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: k.crd},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version("v1alpha1", storage == "v1alpha1", map[string]apiextensionsv1.JSONSchemaProps{"old": str}),
				version("v1beta1", storage == "v1beta1", map[string]apiextensionsv1.JSONSchemaProps{"new": str, "only": str}),
			},
			Conversion: conv,
		},
	}
	ctx := context.Background()
	_, err = k.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = k.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), k.crd, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		got, err := k.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, k.crd, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	// The kind is served at both versions once discovery has it.
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := env.Dynamic().Resource(k.beta).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	return k
}

// convertThings is the converter the test webhook serves (as the API module's
// Convert: fields renamed, what has no equivalent refused by name).
func convertThings(obj *unstructured.Unstructured, to string) error {
	gv, _ := schema.ParseGroupVersion(to)
	rename := func(from, into string) {
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "spec", from); ok {
			unstructured.RemoveNestedField(obj.Object, "spec", from)
			_ = unstructured.SetNestedField(obj.Object, v, "spec", into)
		}
	}
	switch gv.Version {
	case "v1beta1":
		rename("old", "new")
	case "v1alpha1":
		if _, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "only"); ok {
			return errors.New("spec.only: has no v1alpha1 equivalent")
		}
		rename("new", "old")
	default:
		return fmt.Errorf("unknown version %s", to)
	}
	obj.SetAPIVersion(to)
	return nil
}

func thing(apiVersion, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Thing",
		"metadata": map[string]any{"name": name}, "spec": spec}}
}

// startConversionServer serves convertThings on /convert on 127.0.0.1 until
// the returned stop is called (or the test ends).
func startConversionServer(t *testing.T, auth *webhook.ClientAuth) (url string, caBundle []byte, stop func()) {
	t.Helper()
	return startConversionServerFor(t, auth, "w", "ns")
}

// startConversionServerFor is startConversionServer with a certificate for
// Service svc in ns too.
func startConversionServerFor(t *testing.T, auth *webhook.ClientAuth, svc, ns string) (url string, caBundle []byte, stop func()) {
	t.Helper()
	data, _, err := webhook.PlanCerts(time.Now(), nil, (&webhook.Options{ServiceName: svc, Namespace: ns}).CertPolicy())
	require.NoError(t, err)
	dir := t.TempDir()
	for _, k := range []string{webhook.KeyTLSCert, webhook.KeyTLSKey, webhook.KeyCACert} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), data[k], 0o600))
	}
	certs := webhook.NewFileCerts(dir)
	require.NoError(t, certs.Ensure(context.Background()))
	caBundle = data[webhook.KeyCACert]
	s := webhook.NewServer(webhook.ServerOptions{BindAddress: ":0", ClientAuth: auth}, certs, nil)
	s.RegisterConversion(webhook.ConversionPath, "things-convert", convertThings)
	s.Register("/validate", "things-validate", webhook.HandlerFunc(func(context.Context, webhook.Request) webhook.Response { return webhook.Allowed() }))
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	testenv.Eventually(t, 10*time.Second, func() (bool, error) { return s.Ready() == nil, nil })
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	_, p, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	return "https://127.0.0.1:" + p + webhook.ConversionPath, caBundle, stop
}

func urlConversion(url string, caBundle []byte) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
	}}
}

func specOf(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	require.NoError(t, err)
	return spec
}

// Issue 23 item 1: objects written at either version are read back at both
// through kit/webhook's conversion handler, called by the real API server
// over TLS (get, list, watch, update); an object the served version cannot
// hold is never silently cut down: reading it there fails with the
// converter's message naming the field, while the storage version serves it.
func TestConversionThroughTheAPIServer(t *testing.T) {
	env := testenv.Get(t)
	url, caBundle, _ := startConversionServer(t, nil)
	k := newThingKind(t, env, urlConversion(url, caBundle))
	ns := env.Namespace(t)
	ctx := context.Background()
	alpha, beta := env.Dynamic().Resource(k.alpha).Namespace(ns), env.Dynamic().Resource(k.beta).Namespace(ns)

	// Written at v1alpha1 (converted to the storage version), read at both.
	_, err := alpha.Create(ctx, thing(k.group+"/v1alpha1", "a", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := beta.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"new": "x"}, specOf(t, got))
	got, err = alpha.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"old": "x"}, specOf(t, got))

	// Updated at v1beta1, read at v1alpha1, and updated back at v1alpha1.
	_ = unstructured.SetNestedField(got.Object, "y", "spec", "old")
	_, err = alpha.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	got, err = beta.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"new": "y"}, specOf(t, got))

	// A watch at v1alpha1 sees a change made at v1beta1, converted.
	w, err := alpha.Watch(ctx, metav1.ListOptions{ResourceVersion: got.GetResourceVersion()})
	require.NoError(t, err)
	defer w.Stop()
	_ = unstructured.SetNestedField(got.Object, "z", "spec", "new")
	_, err = beta.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		obj, ok := ev.Object.(*unstructured.Unstructured)
		require.True(t, ok, "event %v", ev)
		assert.Equal(t, k.group+"/v1alpha1", obj.GetAPIVersion())
		assert.Equal(t, map[string]any{"old": "z"}, specOf(t, obj))
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event at v1alpha1")
	}

	// v1beta1 only: stored whole; at v1alpha1 it is refused with the field named, not cut down.
	_, err = beta.Create(ctx, thing(k.group+"/v1beta1", "lossy", map[string]any{"new": "x", "only": "kept"}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = alpha.Get(ctx, "lossy", metav1.GetOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.only: has no v1alpha1 equivalent")
	t.Logf("a v1alpha1 read of an object v1alpha1 cannot hold: %v", err)
	_, err = alpha.List(ctx, metav1.ListOptions{})
	require.Error(t, err, "a list converts all its objects in one review: one that cannot be converted fails it")
	got, err = beta.Get(ctx, "lossy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"new": "x", "only": "kept"}, specOf(t, got))
}

// Issue 23 item 1, (a) and (c): with the conversion webhook down — its
// controller stopped, crashed, or its feature uninstalled (the CRD is kept,
// still naming the webhook) — only reads and writes at the non-storage
// version fail, with an error naming the conversion webhook; the storage
// version keeps working (get, list, create, update, delete), and so does
// deleting a namespace holding such objects (the namespace controller and
// the garbage collector read the preferred version, the storage one).
func TestConversionWebhookDown(t *testing.T) {
	env := testenv.Get(t)
	url, caBundle, stop := startConversionServer(t, nil)
	k := newThingKind(t, env, urlConversion(url, caBundle))
	ns := env.Namespace(t)
	ctx := context.Background()
	alpha, beta := env.Dynamic().Resource(k.alpha).Namespace(ns), env.Dynamic().Resource(k.beta).Namespace(ns)
	_, err := alpha.Create(ctx, thing(k.group+"/v1alpha1", "a", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)

	// A namespace of its own to delete while the webhook is down.
	doomed, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-conversion-down-", Labels: map[string]string{"flotilla.dev/e2e": "true"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), doomed.Name, metav1.DeleteOptions{})
	})
	_, err = env.Dynamic().Resource(k.alpha).Namespace(doomed.Name).Create(ctx, thing(k.group+"/v1alpha1", "b", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)

	stop()

	_, err = alpha.Get(ctx, "a", metav1.GetOptions{})
	require.Error(t, err, "a v1alpha1 read needs the webhook")
	assert.Contains(t, err.Error(), "conversion webhook for "+k.group+"/v1beta1, Kind=Thing failed")
	t.Logf("a v1alpha1 read with the webhook down: %v", err)
	_, err = alpha.Create(ctx, thing(k.group+"/v1alpha1", "c", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.Error(t, err, "a v1alpha1 write needs the webhook too")
	t.Logf("a v1alpha1 create with the webhook down: %v", err)

	got, err := beta.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err, "the storage version needs no conversion")
	assert.Equal(t, map[string]any{"new": "x"}, specOf(t, got))
	list, err := beta.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
	_ = unstructured.SetNestedField(got.Object, "y", "spec", "new")
	_, err = beta.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The API server's watch cache keeps the v1alpha1 form of what it
	// converted before the webhook went down, and may list that; an object
	// changed since cannot be converted, so the list fails.
	_, err = alpha.List(ctx, metav1.ListOptions{})
	require.Error(t, err, "a v1alpha1 list of an object changed while the webhook is down")
	_, err = beta.Create(ctx, thing(k.group+"/v1beta1", "d", map[string]any{"new": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, beta.Delete(ctx, "d", metav1.DeleteOptions{}))

	require.NoError(t, env.Kube.CoreV1().Namespaces().Delete(ctx, doomed.Name, metav1.DeleteOptions{}))
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		_, err := env.Kube.CoreV1().Namespaces().Get(ctx, doomed.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// Issue 23 item 1 (b) and (c): the conversion stanza as deploy/overlays/crds
// installs it, before any controller patched it — strategy Webhook naming
// the feature's Service, no CA bundle: the storage version is fully usable,
// only the non-storage version fails, naming the missing Service. The
// feature installed (here the Service as deploy/overlays/local makes it, an
// ExternalName for localhost, which is how the same stanza reaches a local
// process) and a replica's CRDConversion writing its CA (a merge patch on
// the version read, by a client allowed get and patch of that one CRD):
// conversion works. The feature uninstalled (the Service deleted, the CRD
// kept, still naming it): back to the first state.
func TestConversionStanzaBeforeAndAfterTheFeature(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const svcName = "things-controller-webhook"
	url, caBundle, _ := startConversionServerFor(t, nil, svcName, ns)
	_, portStr, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(url, webhook.ConversionPath), "https://"), ":")
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	asShipped := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
			Namespace: ns, Name: svcName, Path: ptr.To(webhook.ConversionPath), Port: ptr.To(int32(port))}},
	}}
	k := newThingKind(t, env, asShipped)
	ctx := context.Background()
	alpha, beta := env.Dynamic().Resource(k.alpha).Namespace(ns), env.Dynamic().Resource(k.beta).Namespace(ns)
	storageWorks := func() {
		t.Helper()
		o := thing(k.group+"/v1beta1", "", map[string]any{"new": "x"})
		o.SetGenerateName("s-")
		obj, err := beta.Create(ctx, o, metav1.CreateOptions{})
		require.NoError(t, err, "the storage version is writable")
		_, err = beta.Get(ctx, obj.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		_, err = beta.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.NoError(t, beta.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}))
	}
	_, err = beta.Create(ctx, thing(k.group+"/v1beta1", "a", map[string]any{"new": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)
	storageWorks()
	alphaFails := func(what, want string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() (bool, error) {
			_, err = alpha.Get(ctx, "a", metav1.GetOptions{})
			return err != nil && strings.Contains(err.Error(), "conversion webhook for "+k.group+"/v1beta1, Kind=Thing failed") &&
				strings.Contains(err.Error(), want), nil
		})
		t.Logf("a v1alpha1 read %s: %v", what, err)
	}
	alphaFails("before the feature is installed", `service "things-controller-webhook" not found`)

	// The feature installed: its Service. On this control plane the API
	// server routes to a Service's endpoints (--enable-aggregator-routing),
	// so a selectorless Service whose endpoint is this host's address reaches
	// the local server, as hack/run-local.sh does for the local controllers.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "conversion", Port: int32(port)}}}}
	_, err = env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: hostIP(t)}}, Ports: []corev1.EndpointPort{{Name: "conversion", Port: int32(port)}}}}}
	_, err = env.Kube.CoreV1().Endpoints(ns).Create(ctx, eps, metav1.CreateOptions{})
	require.NoError(t, err)
	alphaFails("before the controller wrote its CA", "x509")

	// A replica's CRDConversion, as the controller's ServiceAccount is
	// allowed: get and patch of this CRD only.
	limited, err := apiextensionsclient.NewForConfig(restrictedTo(t, env, ns, k.crd))
	require.NoError(t, err)
	sync := webhook.NewCRDConversion(limited.ApiextensionsV1().CustomResourceDefinitions(),
		webhook.ConversionService{Namespace: ns, Name: svcName, Path: webhook.ConversionPath, Port: 443},
		"things-controller", func() []byte { return caBundle }, k.crd)
	require.NoError(t, sync.Sync(ctx))
	cur, err := k.crdsAPI.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, k.crd, metav1.GetOptions{})
	require.NoError(t, err)
	want := asShipped.DeepCopy()
	want.Webhook.ClientConfig.CABundle = caBundle
	assert.Equal(t, want, cur.Spec.Conversion, "the CA written, the Service and its port kept")
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		got, err := alpha.Get(ctx, "a", metav1.GetOptions{})
		return err == nil && got.GetAPIVersion() == k.group+"/v1alpha1", nil
	})
	_, err = alpha.Create(ctx, thing(k.group+"/v1alpha1", "b", map[string]any{"old": "y"}), metav1.CreateOptions{})
	require.NoError(t, err)

	// Uninstalled: the Service goes, the CRD stays as the controller left it.
	require.NoError(t, env.Kube.CoreV1().Services(ns).Delete(ctx, svcName, metav1.DeleteOptions{}))
	_, err = beta.Update(ctx, func() *unstructured.Unstructured {
		got, err := beta.Get(ctx, "a", metav1.GetOptions{})
		require.NoError(t, err)
		_ = unstructured.SetNestedField(got.Object, "changed", "spec", "new")
		return got
	}(), metav1.UpdateOptions{})
	require.NoError(t, err)
	alphaFails("after the feature was uninstalled", `service "things-controller-webhook" not found`)
	storageWorks()
}

// restrictedTo returns a client config for a ServiceAccount of ns allowed
// only get and patch of CRD name (as the controllers' RBAC: resourceNames).
func restrictedTo(t *testing.T, env *testenv.Env, ns, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	sa, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "crd-writer"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-crd-writer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		ResourceNames: []string{name}, Verbs: []string{"get", "patch"}}}}
	_, err = env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	_, err = env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	tok, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tok.Status.Token
	// RBAC is read by the authorizer from its cache: wait until the grant is in force.
	client, err := apiextensionsclient.NewForConfig(cfg)
	require.NoError(t, err)
	testenv.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	_, err = client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "the writer may not list CRDs: %v", err)
	return cfg
}

// The API server presents no client certificate when it calls a conversion
// webhook (its AdmissionConfiguration's kubeConfigFile configures the
// admission plugins only): a server with --webhook-client-ca that required
// one in the handshake failed every conversion ("http2: client conn could
// not be established"). A server that serves conversion therefore accepts
// callers without a certificate on that path only: conversion works through
// the real API server, while its admission paths still refuse such callers.
func TestConversionWithClientAuth(t *testing.T) {
	env := testenv.Get(t)
	caFile, ok := webhookClientCA(env)
	if !ok {
		t.Skip("this control plane was started without the webhook client certificate")
	}
	url, caBundle, _ := startConversionServer(t, &webhook.ClientAuth{CAFile: caFile, Names: []string{"kube-apiserver-webhook-client"}})
	k := newThingKind(t, env, urlConversion(url, caBundle))
	ns := env.Namespace(t)
	ctx := context.Background()
	_, err := env.Dynamic().Resource(k.alpha).Namespace(ns).Create(ctx, thing(k.group+"/v1alpha1", "a", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.NoError(t, err, "the API server's conversion call is served")
	got, err := env.Dynamic().Resource(k.alpha).Namespace(ns).Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"old": "x"}, specOf(t, got))

	// An admission path of the same server still wants the certificate.
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caBundle))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(strings.Replace(url, webhook.ConversionPath, "/validate", 1), "application/json",
		bytes.NewReader([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x"}}`)))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// The client CA the API server's admission webhooks present, if this control
// plane configures one.
func webhookClientCA(env *testenv.Env) (string, bool) {
	dir := clusterDir(env)
	if _, err := os.Stat(filepath.Join(dir, "admission", "config.yaml")); err != nil {
		return "", false
	}
	return filepath.Join(dir, "pki", "webhook-client-ca.crt"), true
}

// hostIP is an address of this host other than loopback (which a Service's
// endpoints may not name).
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host")
	return ""
}

// Why the storage version should be the preferred one (the highest, v1beta1):
// the namespace controller lists every namespaced kind at its preferred
// version when it empties a namespace. With v1alpha1 stored and v1beta1
// preferred, deleting a namespace that holds such an object needs the
// conversion webhook: while it is down the namespace stays Terminating,
// its condition naming the conversion failure, and it goes once the webhook
// is back. (Stored at the preferred version it goes at once:
// TestConversionWebhookDown.)
func TestNamespaceDeletionWaitsForConversionUnlessStoredAtThePreferredVersion(t *testing.T) {
	env := testenv.Get(t)
	url, caBundle, stop := startConversionServer(t, nil)
	k := newThingKindStoredAt(t, env, urlConversion(url, caBundle), "v1alpha1")
	ctx := context.Background()
	doomed, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-conversion-preferred-", Labels: map[string]string{"flotilla.dev/e2e": "true"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), doomed.Name, metav1.DeleteOptions{})
	})
	_, err = env.Dynamic().Resource(k.alpha).Namespace(doomed.Name).Create(ctx, thing(k.group+"/v1alpha1", "b", map[string]any{"old": "x"}), metav1.CreateOptions{})
	require.NoError(t, err)
	stop()

	require.NoError(t, env.Kube.CoreV1().Namespaces().Delete(ctx, doomed.Name, metav1.DeleteOptions{}))
	var msg string
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, doomed.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "conversion webhook") {
				msg = string(c.Type) + ": " + c.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("namespace %s stays Terminating: %s", doomed.Name, msg)

	// The webhook back (a new replica): the namespace goes.
	url2, caBundle2, _ := startConversionServer(t, nil)
	crds := k.crdsAPI.ApiextensionsV1().CustomResourceDefinitions()
	cur, err := crds.Get(ctx, k.crd, metav1.GetOptions{})
	require.NoError(t, err)
	cur.Spec.Conversion = urlConversion(url2, caBundle2)
	_, err = crds.Update(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, 3*time.Minute, func() (bool, error) {
		_, err := env.Kube.CoreV1().Namespaces().Get(ctx, doomed.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
