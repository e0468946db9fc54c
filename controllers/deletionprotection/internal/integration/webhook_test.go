package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/controllers/deletionprotection/internal/protect"
	"github.com/flotilla-dev/flotilla/kit/features"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// serveWebhook installs the component's webhook configuration, renamed for
// this test, called by URL on a webhook served in-process (the real handlers
// with both gates on) and narrowed to the test's objects; it returns the
// webhook once the API server can call it, and the function stopping it.
func (h *harness) serveWebhook() (*lab.Webhook, func()) {
	h.T.Helper()
	var cfg *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, obj := range h.component("webhook.yaml") {
		if obj.GetKind() == "ValidatingWebhookConfiguration" {
			cfg = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			require.NoError(h.T, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cfg))
		}
	}
	require.NotNil(h.T, cfg, "webhook.yaml has the configuration")
	require.Equal(h.T, protect.ConfigName, cfg.Name)
	cfg.Name += "-" + h.ID
	ref := kitwebhook.ConfigRef{Kind: kitwebhook.Validating, Name: cfg.Name}
	w := h.NewWebhook(h.NS, "deletionprotection-controller-webhook", ref)
	for i := range cfg.Webhooks {
		e := &cfg.Webhooks[i]
		e.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: w.URL(*e.ClientConfig.Service.Path)}
		e.ObjectSelector.MatchLabels[testLabel] = h.ID
	}
	h.InstallValidating(cfg)
	gates := h.Gates([]featuregate.Feature{features.ResourcesDeletionProtection, features.DeletionProtectionForCRDCascadingGate},
		map[featuregate.Feature]bool{features.ResourcesDeletionProtection: true, features.DeletionProtectionForCRDCascadingGate: true})
	(&protect.Webhook{Kube: h.Env.Kube, Metadata: metadata.NewForConfigOrDie(h.Env.Config), Gates: gates}).Register(w.Server)
	return w, w.Serve()
}

// pendingPod creates a pod in ns that no node runs: active (Pending) until
// its phase is set.
func (h *harness) pendingPod(ns, name string) *corev1.Pod {
	h.T.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"deletion-protection.flotilla.dev/nowhere": "true"},
		Containers:   []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
	}}
	out, err := h.Env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(h.T, err)
	return out
}

// boundClaim creates a claim in ns pre-bound to a volume of its own and
// waits until the PersistentVolume controller reports it Bound. The volume
// is deleted when the test ends.
func (h *harness) boundClaim(ns, name string) {
	h.T.Helper()
	ctx, kube := context.Background(), h.Env.Kube.CoreV1()
	pvName := "dp-" + h.ID + "-" + name
	size := resource.MustParse("1Mi")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{testLabel: h.ID}}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		StorageClassName:              "",
		ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/" + pvName}},
	}}
	_, err := kube.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(h.T, err)
	h.T.Cleanup(func() { _ = kube.PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{}) })
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		StorageClassName: &empty,
		VolumeName:       pvName,
	}}
	_, err = kube.PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	require.NoError(h.T, err)
	testenv.Eventually(h.T, timeout, func() (bool, error) {
		got, err := kube.PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound, err
	})
}

// TestWebhookNamespaceCascading: a Cascading namespace is refused while it
// has an active pod, then while it has a bound claim, each named in the
// message; a Succeeded pod is not active; with neither it is deleted, and
// without the label it is deleted whatever it holds. Namespaces without
// the label never reach the webhook.
func TestWebhookNamespaceCascading(t *testing.T) {
	h := newHarness(t)
	w, _ := h.serveWebhook()
	ctx := context.Background()

	ns := h.protectedNamespace(protect.Cascading)
	h.pendingPod(ns, "active")
	requireDenied(t, h.deleteNow(namespacesGVR, "", ns), cascMsg+" and active pods 1>0")

	_, err := h.Env.Kube.CoreV1().Pods(ns).Patch(ctx, "active", types.MergePatchType,
		[]byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.NoError(t, h.deleteDryRun(namespacesGVR, "", ns), "a Succeeded pod is not active")

	h.boundClaim(ns, "data")
	requireDenied(t, h.deleteNow(namespacesGVR, "", ns), cascMsg+` and "Bound" status pvc 1>0`)
	require.NoError(t, h.Env.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}))
	testenv.Eventually(t, timeout, func() (bool, error) { return h.deleteDryRun(namespacesGVR, "", ns) == nil, nil })
	require.Positive(t, w.Requests(protect.NamespaceHandler), "the webhook decided")

	// The label removed: deleted although a pod is active.
	other := h.protectedNamespace(protect.Cascading)
	h.pendingPod(other, "active")
	requireDenied(t, h.deleteNow(namespacesGVR, "", other), cascMsg+" and active pods 1>0")
	h.setLabel(namespacesGVR, "", other, nil)
	calls := w.Requests(protect.NamespaceHandler)
	require.NoError(t, h.deleteNow(namespacesGVR, "", other))
	require.Equal(t, calls, w.Requests(protect.NamespaceHandler), "an unlabelled namespace is not sent to the webhook")

	require.NoError(t, h.deleteNow(namespacesGVR, "", ns), "no active pod, no bound claim: deleted")
}

// TestWebhookCRDCascading: a Cascading CRD is refused while objects of it
// exist (the message names the label and the count — from one object read
// and the API server's remaining count, or, when the first object is being
// deleted, by reading on), deleted once none is left but objects being
// deleted, or once its label is removed.
func TestWebhookCRDCascading(t *testing.T) {
	h := newHarness(t)
	w, _ := h.serveWebhook()
	ctx := context.Background()
	crd, gvr := h.protectedCRD(protect.Cascading)
	widget := func(gvr schema.GroupVersionResource, name string, finalizers ...string) {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Widget"}}
		u.SetName(name)
		u.SetFinalizers(finalizers)
		h.create(gvr, h.NS, u)
		if len(finalizers) > 0 { // released whatever happens, or the CRD's cleanup would wait on it
			t.Cleanup(func() {
				_, _ = h.dyn.Resource(gvr).Namespace(h.NS).Patch(context.Background(), name, types.MergePatchType,
					[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			})
		}
	}
	for _, name := range []string{"one", "two", "three"} {
		widget(gvr, name)
	}
	requireDenied(t, h.deleteNow(crdGVR, "", crd), cascMsg+" and active CRs 3>0")
	for _, name := range []string{"one", "two", "three"} {
		require.NoError(t, h.deleteNow(gvr, h.NS, name))
	}
	require.NoError(t, h.deleteDryRun(crdGVR, "", crd), "no objects left: allowed")

	// The first object listed is being deleted (held by a finalizer): the webhook reads on.
	widget(gvr, "a-going", "deletion-protection.flotilla.dev/test")
	require.NoError(t, h.deleteNow(gvr, h.NS, "a-going"))
	widget(gvr, "b-staying")
	requireDenied(t, h.deleteNow(crdGVR, "", crd), cascMsg+" and active CRs 1>0")
	require.NoError(t, h.deleteNow(gvr, h.NS, "b-staying"))
	require.NoError(t, h.deleteDryRun(crdGVR, "", crd), "only an object being deleted left: allowed")
	_, err := h.dyn.Resource(gvr).Namespace(h.NS).Patch(ctx, "a-going", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, h.deleteNow(crdGVR, "", crd))
	require.Positive(t, w.Requests(protect.CRDHandler), "the webhook decided")

	// The label removed: deleted with its objects.
	other, otherGVR := h.protectedCRD(protect.Cascading)
	widget(otherGVR, "one")
	requireDenied(t, h.deleteNow(crdGVR, "", other), cascMsg+" and active CRs 1>0")
	h.setLabel(crdGVR, "", other, nil)
	require.NoError(t, h.deleteNow(crdGVR, "", other), "label removed: deleted although an object exists")
}

// TestWebhookDown: with the webhook stopped (failurePolicy Fail), only
// Namespaces and CRDs labelled Cascading are held; unlabelled ones, and
// ones whose label is removed, delete normally.
func TestWebhookDown(t *testing.T) {
	h := newHarness(t)
	_, stop := h.serveWebhook()
	stop() // the configuration stays, nothing answers

	ns := h.protectedNamespace(protect.Cascading)
	require.ErrorContains(t, h.deleteNow(namespacesGVR, "", ns), "failed calling webhook", "a Cascading namespace waits for the webhook")
	crd, _ := h.protectedCRD(protect.Cascading)
	require.ErrorContains(t, h.deleteNow(crdGVR, "", crd), "failed calling webhook", "a Cascading CRD waits for the webhook")

	plain := h.protectedNamespace("")
	require.NoError(t, h.deleteNow(namespacesGVR, "", plain), "an unlabelled namespace is deleted")
	plainCRD, _ := h.protectedCRD("")
	require.NoError(t, h.deleteNow(crdGVR, "", plainCRD), "an unlabelled CRD is deleted")

	h.setLabel(namespacesGVR, "", ns, nil)
	require.NoError(t, h.deleteNow(namespacesGVR, "", ns), "label removed: deleted")
	h.setLabel(crdGVR, "", crd, nil)
	require.NoError(t, h.deleteNow(crdGVR, "", crd), "label removed: deleted")
}
