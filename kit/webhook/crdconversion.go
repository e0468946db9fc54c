package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// ConversionPath is where a binary serves CRD conversion.
const ConversionPath = "/convert"

// ConversionService is the Service the API server calls for conversion: the
// binary's conversion Service (--webhook-conversion-service-name, default
// --webhook-service-name, in --webhook-secret-namespace), port 443 unless
// the CRD names one, path /convert.
type ConversionService struct {
	Namespace, Name string
	Path            string
	Port            int32
}

// PlanConversion decides a CRD's spec.conversion: strategy Webhook,
// ConversionReview v1, and a client configuration calling svc with bundle
// as its CA. A CRD whose strategy is not Webhook is left alone: the
// manifests (apis/crd-patches) ship Webhook with the Service's port, so None
// means a CRD from before the upgrade (one version: nothing to convert) or
// an operator's deliberate choice, and a binary started against it must not
// guess a port. A configuration by URL (deploy/overlays/local: a controller
// running as a local process) keeps its URL, only the bundle is written; a
// service reference is set to svc (so a controller installed in another
// namespace is called there), keeping the manifest's port when it has one.
// A nil bundle (external certificates without ca.crt: cert-manager's CA
// injector writes it) keeps the CRD's. It reports whether anything changed.
func PlanConversion(cur *apiextensionsv1.CustomResourceConversion, svc ConversionService, bundle []byte) (*apiextensionsv1.CustomResourceConversion, bool) {
	if cur == nil || cur.Strategy != apiextensionsv1.WebhookConverter {
		return cur, false
	}
	want := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	if cur.Webhook != nil {
		want.Webhook = cur.Webhook.DeepCopy()
	} else {
		want.Webhook = &apiextensionsv1.WebhookConversion{}
	}
	w := want.Webhook
	// The server speaks v1 only: the API server picks the first version of
	// the list it knows.
	w.ConversionReviewVersions = []string{"v1"}
	if w.ClientConfig == nil {
		w.ClientConfig = &apiextensionsv1.WebhookClientConfig{}
	}
	cc := w.ClientConfig
	if cc.URL == nil {
		port := svc.Port
		if cc.Service != nil && cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		cc.Service = &apiextensionsv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: ptr.To(svc.Path), Port: ptr.To(port)}
	}
	if bundle != nil && !bytes.Equal(cc.CABundle, bundle) {
		cc.CABundle = slices.Clone(bundle)
	}
	return want, !equality.Semantic.DeepEqual(cur, want)
}

// CRDConversion keeps the conversion stanza of the binary's own CRDs (the
// kinds whose versions it converts) equal to PlanConversion's: every
// replica runs it, like CABundleInjector, so the bundle is right whoever
// leads. It reads each CRD by name and patches spec.conversion only when it
// differs (RBAC: get and patch on those names only); it re-checks every
// Resync, which also repairs a re-applied CRD.
type CRDConversion struct {
	CRDs    apiextensionsclient.CustomResourceDefinitionInterface
	Names   []string // CRD names, e.g. daemonsets.apps.kruise.io
	Service ConversionService
	// FieldManager names the writer in managedFields (the binary).
	FieldManager string
	bundleSource
}

// NewCRDConversion keeps names' conversion pointed at svc with bundle().
func NewCRDConversion(crds apiextensionsclient.CustomResourceDefinitionInterface, svc ConversionService, fieldManager string, bundle func() []byte, names ...string) *CRDConversion {
	return &CRDConversion{CRDs: crds, Names: names, Service: svc, FieldManager: fieldManager, bundleSource: newBundleSource(bundle)}
}

// Sync brings every CRD's conversion stanza in step. A missing CRD is an
// error (retried): deploy/overlays/crds installs them.
func (c *CRDConversion) Sync(ctx context.Context) error {
	bundle, err := c.current(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range c.Names {
		if err := c.syncOne(ctx, name, bundle); err != nil {
			errs = append(errs, fmt.Errorf("conversion of CRD %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *CRDConversion) syncOne(ctx context.Context, name string, bundle []byte) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		crd, err := c.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want, changed := PlanConversion(crd.Spec.Conversion, c.Service, bundle)
		if !changed {
			return nil
		}
		// A merge patch of the stanza alone, on the version judged: it never
		// writes back anything else of a CRD that changed meanwhile.
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": crd.ResourceVersion},
			"spec":     map[string]any{"conversion": want},
		})
		if err != nil {
			return err
		}
		if _, err := c.CRDs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: c.FieldManager}); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Wrote the conversion webhook into the CRD", "crd", name, "strategy", want.Strategy)
		return nil
	})
}

// Run syncs until ctx is done (at start, on Trigger, every Resync; failures
// retried with back-off).
func (c *CRDConversion) Run(ctx context.Context) {
	runLoop(ctx, c.trigger, c.Resync, "crd conversion", c.Sync)
}
