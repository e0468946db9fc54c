package protect

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// Paths and metrics names of the two handlers (OpenKruise's paths).
const (
	NamespacePath    = "/validate-namespace"
	NamespaceHandler = "namespace-deletion-protection"
	CRDPath          = "/validate-customresourcedefinition"
	CRDHandler       = "crd-deletion-protection"
	// ConfigName is the ValidatingWebhookConfiguration of
	// deploy/components/deletionprotection.
	ConfigName = "flotilla-deletionprotection"
)

// pageSize bounds each list response of a lookup that reads on (a
// namespace's pods and claims, the message carrying their exact count as
// OpenKruise's does; a CRD's objects after one being deleted).
const pageSize = 500

// Webhook answers DELETE of labelled Namespaces and CRDs. The lookups are
// live lists (metadata only where metadata decides) made only for a
// Cascading deletion: nothing is cached between requests.
type Webhook struct {
	Kube     kubernetes.Interface
	Metadata metadata.Interface
	Gates    featuregate.FeatureGate
}

// Register adds both handlers to s.
func (w *Webhook) Register(s *kitwebhook.Server) {
	s.Register(NamespacePath, NamespaceHandler, kitwebhook.HandlerFunc(w.Namespace))
	s.Register(CRDPath, CRDHandler, kitwebhook.HandlerFunc(w.CRD))
}

// old decodes the DELETE request's old object into into; ok false (with
// the response to give) when there is nothing to decide.
func (w *Webhook) old(req kitwebhook.Request, into metav1.Object) (kitwebhook.Response, bool) {
	if req.Operation != admissionv1.Delete || req.SubResource != "" || !w.Gates.Enabled(features.ResourcesDeletionProtection) {
		return kitwebhook.Allowed(), false
	}
	if len(req.OldObject.Raw) == 0 {
		return kitwebhook.Allowed(), false
	}
	if err := req.DecodeOldObject(into); err != nil {
		return kitwebhook.Errored(http.StatusBadRequest, err), false
	}
	// Already being deleted: a repeated DELETE changes nothing (OpenKruise).
	if into.GetDeletionTimestamp() != nil {
		return kitwebhook.Allowed(), false
	}
	return kitwebhook.Response{}, true
}

// Namespace decides a namespace's deletion.
func (w *Webhook) Namespace(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	ns := &corev1.Namespace{}
	resp, ok := w.old(req, ns)
	if !ok {
		return resp
	}
	value := ns.Labels[Label]
	var c Counts
	if NeedsLookup(value, false, false) {
		var err error
		if c, err = w.namespaceCounts(ctx, ns.Name); err != nil {
			// OpenKruise refuses when it cannot tell.
			return kitwebhook.Denied("forbidden by ResourcesProtectionDeletion for %v", err)
		}
	}
	return w.verdict(ctx, req, Namespace(value, c))
}

// CRD decides a CustomResourceDefinition's deletion.
func (w *Webhook) CRD(ctx context.Context, req kitwebhook.Request) kitwebhook.Response {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	resp, ok := w.old(req, crd)
	if !ok {
		return resp
	}
	value := crd.Labels[Label]
	gate := w.Gates.Enabled(features.DeletionProtectionForCRDCascadingGate)
	var c Counts
	if NeedsLookup(value, true, gate) {
		gvr, err := ListedVersion(crd)
		if err != nil {
			return kitwebhook.Denied("%v", err)
		}
		if c.Objects, err = w.activeObjects(ctx, gvr); err != nil {
			return kitwebhook.Denied("failed to list CRs of %v: %v", gvr, err)
		}
	}
	return w.verdict(ctx, req, CRD(value, gate, c))
}

// verdict turns a decision's message into the response, logging a denial
// with who asked (OpenKruise logs a protection event; the server's logger
// already names the object).
func (w *Webhook) verdict(ctx context.Context, req kitwebhook.Request, msg string) kitwebhook.Response {
	if msg == "" {
		return kitwebhook.Allowed()
	}
	klog.FromContext(ctx).Info("Deletion refused by delete-protection", "user", req.UserInfo.Username, "reason", msg)
	return kitwebhook.Denied("%s", msg)
}

// ListedVersion is the resource to list a CRD's objects at: its storage
// version (OpenKruise's choice) when served, else the first served one.
func ListedVersion(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, error) {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Served {
			gvr.Version = v.Name
			return gvr, nil
		}
	}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			gvr.Version = v.Name
			return gvr, nil
		}
	}
	return gvr, fmt.Errorf("CRD %s serves no version to list its objects at", crd.Name)
}

// namespaceCounts counts the namespace's active pods (metadata only: the
// API server filters out Succeeded and Failed) and, only when there are
// none, its bound claims (the phase needs the claim's status).
func (w *Webhook) namespaceCounts(ctx context.Context, ns string) (Counts, error) {
	var c Counts
	pods := w.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns)
	err := pages(ctx, "", func(opts metav1.ListOptions) (string, error) {
		opts.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
		l, err := pods.List(ctx, opts)
		if err != nil {
			return "", err
		}
		c.ActivePods += active(l.Items)
		return l.Continue, nil
	})
	if err != nil || c.ActivePods > 0 {
		return c, wrap("list pods", err)
	}
	err = pages(ctx, "", func(opts metav1.ListOptions) (string, error) {
		l, err := w.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			if l.Items[i].DeletionTimestamp == nil && l.Items[i].Status.Phase == corev1.ClaimBound {
				c.BoundPVCs++
			}
		}
		return l.Continue, nil
	})
	return c, wrap("list pvc", err)
}

// activeObjects counts the objects of gvr not being deleted, in every
// namespace, reading as little as it can: a first list of Limit 1
// (metadata only) decides, and when its object is not being deleted the API
// server's remainingItemCount completes the count without reading the rest
// (objects being deleted among those are counted too). Only when the first
// object is being deleted does it read on, a page at a time, counting
// exactly.
func (w *Webhook) activeObjects(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
	res := w.Metadata.Resource(gvr)
	first, err := res.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	if n := active(first.Items); n > 0 {
		if first.RemainingItemCount != nil {
			n += int(*first.RemainingItemCount)
		}
		return n, nil
	}
	n := 0
	if first.Continue == "" {
		return 0, nil
	}
	err = pages(ctx, first.Continue, func(opts metav1.ListOptions) (string, error) {
		l, err := res.List(ctx, opts)
		if err != nil {
			return "", err
		}
		n += active(l.Items)
		return l.Continue, nil
	})
	return n, err
}

// active counts the objects of items not being deleted.
func active(items []metav1.PartialObjectMetadata) int {
	n := 0
	for i := range items {
		if items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// pages calls list with Limit pageSize, from the continue token cont ("":
// the start), until it returns no continue token.
func pages(ctx context.Context, cont string, list func(metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: pageSize, Continue: cont}
	for {
		cont, err := list(opts)
		if err != nil {
			return err
		}
		if cont == "" || ctx.Err() != nil {
			return ctx.Err()
		}
		opts.Continue = cont
	}
}

// wrap names the lookup that failed the way OpenKruise's message does
// ("list pods error: …").
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s error: %w", what, err)
}
