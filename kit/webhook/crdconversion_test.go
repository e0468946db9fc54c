package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var testService = ConversionService{Namespace: "elsewhere", Name: "x-controller-webhook", Path: ConversionPath, Port: 443}

func svcConversion(ns string, port *int32, bundle []byte) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: bundle,
			Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: "x-controller-webhook", Path: ptr.To(ConversionPath), Port: port}},
	}}
}

func urlConversion(bundle []byte) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:19445/convert"), CABundle: bundle},
	}}
}

// The conversion stanza a controller keeps: strategy Webhook, review v1,
// its Service (in its namespace) or the local overlay's URL, its CA; what
// is already right is not written.
func TestPlanConversion(t *testing.T) {
	bundle := []byte("PEM")
	cases := []struct {
		name    string
		cur     *apiextensionsv1.CustomResourceConversion
		bundle  []byte
		want    *apiextensionsv1.CustomResourceConversion
		changed bool
	}{
		{"no stanza (a CRD from before the upgrade) is left alone", nil, bundle, nil, false},
		{"strategy None is left alone", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
			bundle, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}, false},
		{"Webhook without a client configuration", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter},
			bundle, svcConversion("elsewhere", ptr.To[int32](443), bundle), true},
		{"as shipped: flotilla-system, no bundle", svcConversion("flotilla-system", ptr.To[int32](443), nil),
			bundle, svcConversion("elsewhere", ptr.To[int32](443), bundle), true},
		{"the manifest's port is kept", svcConversion("elsewhere", ptr.To[int32](8443), nil),
			bundle, svcConversion("elsewhere", ptr.To[int32](8443), bundle), true},
		{"in step", svcConversion("elsewhere", ptr.To[int32](443), bundle), bundle, svcConversion("elsewhere", ptr.To[int32](443), bundle), false},
		{"a rotated CA", svcConversion("elsewhere", ptr.To[int32](443), []byte("OLD")), bundle, svcConversion("elsewhere", ptr.To[int32](443), bundle), true},
		{"the local overlay's URL is kept", urlConversion(nil), bundle, urlConversion(bundle), true},
		{"unknown bundle (cert-manager injects it) is left alone", svcConversion("elsewhere", ptr.To[int32](443), []byte("CM")), nil,
			svcConversion("elsewhere", ptr.To[int32](443), []byte("CM")), false},
		{"review versions are v1 only", func() *apiextensionsv1.CustomResourceConversion {
			c := svcConversion("elsewhere", ptr.To[int32](443), bundle)
			c.Webhook.ConversionReviewVersions = []string{"v1beta1", "v1"}
			return c
		}(), bundle, svcConversion("elsewhere", ptr.To[int32](443), bundle), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before *apiextensionsv1.CustomResourceConversion
			if c.cur != nil {
				before = c.cur.DeepCopy()
			}
			got, changed := PlanConversion(c.cur, testService, c.bundle)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.changed, changed)
			assert.Equal(t, before, c.cur, "the current stanza is not modified")
		})
	}
}

// Every named CRD gets the stanza, once; a CRD another writer changed is
// repaired at the next sync; a missing CRD is an error naming it (retried),
// and does not keep the others from being written.
func TestCRDConversionSync(t *testing.T) {
	crd := func(name string, conv *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "apps.kruise.io", Conversion: conv}}
	}
	client := fake.NewClientset(
		crd("a.apps.kruise.io", svcConversion("flotilla-system", ptr.To[int32](443), nil)),
		crd("b.apps.kruise.io", svcConversion("flotilla-system", ptr.To[int32](443), []byte("OLD"))),
		crd("none.apps.kruise.io", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}),
		crd("other.apps.kruise.io", svcConversion("flotilla-system", ptr.To[int32](443), nil)),
	)
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	bundle := []byte("PEM")
	refreshed := 0
	c := NewCRDConversion(api, testService, "x-controller", func() []byte { return bundle }, "a.apps.kruise.io", "b.apps.kruise.io", "none.apps.kruise.io")
	c.Refresh = func(context.Context) error { refreshed++; return nil }
	ctx := context.Background()
	require.NoError(t, c.Sync(ctx))
	assert.Equal(t, 1, refreshed, "the certificates are re-read before each sync")
	get := func(name string) *apiextensionsv1.CustomResourceConversion {
		got, err := api.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return got.Spec.Conversion
	}
	assert.Equal(t, svcConversion("elsewhere", ptr.To[int32](443), bundle), get("a.apps.kruise.io"))
	assert.Equal(t, svcConversion("elsewhere", ptr.To[int32](443), bundle), get("b.apps.kruise.io"))
	assert.Equal(t, svcConversion("flotilla-system", ptr.To[int32](443), nil), get("other.apps.kruise.io"), "only the binary's own CRDs")
	assert.Equal(t, apiextensionsv1.NoneConverter, get("none.apps.kruise.io").Strategy, "strategy None is not turned into Webhook")

	client.ClearActions()
	require.NoError(t, c.Sync(ctx))
	for _, a := range client.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "nothing to write")
	}

	// A re-applied CRD (the crds overlay) is repaired.
	got, _ := api.Get(ctx, "a.apps.kruise.io", metav1.GetOptions{})
	got.Spec.Conversion = svcConversion("flotilla-system", ptr.To[int32](443), nil)
	_, err := api.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Sync(ctx))
	assert.Equal(t, svcConversion("elsewhere", ptr.To[int32](443), bundle), get("a.apps.kruise.io"))

	// A missing CRD fails the sync, naming it; the others are still written.
	require.NoError(t, api.Delete(ctx, "a.apps.kruise.io", metav1.DeleteOptions{}))
	bundle = []byte("NEW")
	err = c.Sync(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "conversion of CRD a.apps.kruise.io")
	assert.Equal(t, svcConversion("elsewhere", ptr.To[int32](443), bundle), get("b.apps.kruise.io"))

	// Certificates that cannot be read: nothing is written.
	c.Refresh = func(context.Context) error { return errors.New("secret unreadable") }
	client.ClearActions()
	require.Error(t, c.Sync(ctx))
	assert.Empty(t, client.Actions())
}
