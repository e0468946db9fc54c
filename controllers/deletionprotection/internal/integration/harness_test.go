// Package integration runs deletion protection against the real local
// control plane: the component's ValidatingAdmissionPolicies, applied from
// deploy/components/deletionprotection, and the webhook, served in-process
// and called by the real API server over TLS through the component's
// webhook configuration. Every object a test creates carries a label unique
// to the test, and the test's copies of the policies and the configuration
// select only objects with it: tests run in parallel with each other and with
// other packages without touching their objects.
package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/controllers/deletionprotection/internal/protect"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testLabel marks the objects of one test (value: the test's id).
const testLabel = "deletion-protection.flotilla.dev/test"

const timeout = time.Minute

var (
	vapGVR        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	bindingGVR    = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// harness is one test's lab with its id.
type harness struct {
	*lab.Lab
	ID  string
	dyn dynamic.Interface
	// crds numbers the CRDs the test creates (each its own group).
	crds *atomic.Int32
	// warned collects the warnings the API server returns to dyn.
	warned *warnings
}

func newHarness(t *testing.T) *harness {
	l := lab.New(t, timeout)
	cfg := rest.CopyConfig(l.Env.Config)
	w := &warnings{}
	cfg.WarningHandler = w
	return &harness{Lab: l, ID: utilrand.String(8), dyn: dynamic.NewForConfigOrDie(cfg), crds: &atomic.Int32{}, warned: w}
}

// warnings records the warning headers of the harness's requests.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// take returns the warnings recorded since the last call.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.got
	w.got = nil
	return got
}

// ownWarnings are the warnings of the test's own Warn bindings (see
// installPolicies) since the last call.
func (h *harness) ownWarnings() []string {
	var own []string
	for _, w := range h.warned.take() {
		if strings.Contains(w, "-"+h.ID+"-warn'") {
			own = append(own, w)
		}
	}
	return own
}

// requireRefused fails unless err refuses the deletion with msg and the
// test's own copy of the policies reached that decision (its Warn binding
// reports msg): a copy of the component installed in the cluster by
// another run (deploy/overlays/local) decides the same, and must not make
// the test pass for a policy that no longer would.
func (h *harness) requireRefused(t *testing.T, err error, msg string) {
	t.Helper()
	requireDenied(t, err, msg)
	own := h.ownWarnings()
	require.NotEmpty(t, own, "the test's policy decided nothing")
	// The last warning is the final decision. An API server may validate a
	// DELETE twice: first against the object it had at hand, and when that
	// refuses and the object turns out to be stale (a label changed just
	// before), again against the current one. Warnings of both attempts
	// reach the client (seen in CI: Always, then Cascading, right after the
	// label went from Always to Cascading).
	require.Contains(t, own[len(own)-1], msg, "the test's policy decided: %v", own)
}

// requireAllowed fails unless the deletion went through and the test's own
// policies had nothing to say.
func (h *harness) requireAllowed(t *testing.T, err error, what string) {
	t.Helper()
	require.NoError(t, err, what)
	require.Empty(t, h.ownWarnings(), what)
}

// sub is h for subtest t (its failures stop t, not the parent).
func (h *harness) sub(t *testing.T) *harness {
	l := *h.Lab
	l.T = t
	return &harness{Lab: &l, ID: h.ID, dyn: h.dyn, crds: h.crds, warned: h.warned}
}

// component reads the objects of file in deploy/components/deletionprotection.
func (h *harness) component(file string) []*unstructured.Unstructured {
	h.T.Helper()
	data, err := os.ReadFile(filepath.Join(h.Env.RepoRoot, "deploy/components/deletionprotection", file))
	require.NoError(h.T, err)
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(h.T, err)
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// installPolicies creates the component's policies and bindings, renamed
// for this test, each binding narrowed to the objects labelled with the
// test's id, and beside each binding a second one, "<binding>-warn", with
// validationActions Warn: the API server reports each of those decisions by
// the test's binding name, whether or not it was also refused by another
// copy of the policies. It waits until the API server enforces them (a probe
// Service labelled Always draws the test's warning). They are deleted when
// the test ends.
func (h *harness) installPolicies() {
	h.T.Helper()
	ctx := context.Background()
	for _, obj := range h.component("policies.yaml") {
		gvr := vapGVR
		switch obj.GetKind() {
		case "ValidatingAdmissionPolicy":
		case "ValidatingAdmissionPolicyBinding":
			gvr = bindingGVR
			policy, _, _ := unstructured.NestedString(obj.Object, "spec", "policyName")
			require.NoError(h.T, unstructured.SetNestedField(obj.Object, policy+"-"+h.ID, "spec", "policyName"))
			require.NoError(h.T, unstructured.SetNestedField(obj.Object, map[string]any{testLabel: h.ID},
				"spec", "matchResources", "objectSelector", "matchLabels"))
		default:
			h.T.Fatalf("unexpected %s in policies.yaml", obj.GetKind())
		}
		obj.SetName(obj.GetName() + "-" + h.ID)
		objs := []*unstructured.Unstructured{obj}
		if gvr == bindingGVR {
			warn := obj.DeepCopy()
			warn.SetName(obj.GetName() + "-warn")
			require.NoError(h.T, unstructured.SetNestedStringSlice(warn.Object, []string{"Warn"}, "spec", "validationActions"))
			objs = append(objs, warn)
		}
		for _, o := range objs {
			_, err := h.dyn.Resource(gvr).Create(ctx, o, metav1.CreateOptions{})
			require.NoError(h.T, err)
			name := o.GetName()
			h.T.Cleanup(func() { _ = h.dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
	}
	probe := h.create(servicesGVR, h.NS, service("probe", h.labels(protect.Always)))
	testenv.Eventually(h.T, timeout, func() (bool, error) {
		err := h.deleteDryRun(servicesGVR, h.NS, probe.GetName())
		return err != nil && len(h.ownWarnings()) > 0, nil
	})
	h.setLabel(servicesGVR, h.NS, probe.GetName(), nil)
	h.warned.take()
}

// labels are the labels of a test object protected with value ("": none).
func (h *harness) labels(value string) map[string]string {
	l := map[string]string{testLabel: h.ID}
	if value != "" {
		l[protect.Label] = value
	}
	return l
}

func (h *harness) create(gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured) *unstructured.Unstructured {
	h.T.Helper()
	out, err := h.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(h.T, err, "create %s %s", gvr.Resource, obj.GetName())
	return out
}

// deleteDryRun asks the API server to delete the object without deleting
// it: admission (policies and webhooks) decides as for a real deletion.
func (h *harness) deleteDryRun(gvr schema.GroupVersionResource, ns, name string) error {
	return h.dyn.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
}

// deleteNow deletes the object for real.
func (h *harness) deleteNow(gvr schema.GroupVersionResource, ns, name string) error {
	return h.dyn.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
}

// setLabel sets the delete-protection label to *value, or removes it (nil).
func (h *harness) setLabel(gvr schema.GroupVersionResource, ns, name string, value *string) {
	h.T.Helper()
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, protect.Label, v)
	_, err := h.dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(h.T, err, "label %s %s", gvr.Resource, name)
}

// requireDenied fails unless err is the API server refusing the deletion
// with a message containing each of want.
func requireDenied(t *testing.T, err error, want ...string) {
	t.Helper()
	require.Error(t, err, "deletion allowed, want it refused")
	require.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsInternalError(err), "not a refusal: %v", err)
	for _, w := range want {
		require.Contains(t, err.Error(), w)
	}
}

// protectedNamespace creates a namespace labelled value; when the test
// ends its label is removed (the protection would refuse the cleanup) and
// it is deleted.
func (h *harness) protectedNamespace(value string) string {
	h.T.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetGenerateName("e2e-deletion-protection-")
	ns.SetLabels(h.labels(value))
	name := h.create(namespacesGVR, "", ns).GetName()
	h.T.Cleanup(func() {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, protect.Label)
		_, _ = h.dyn.Resource(namespacesGVR).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		_ = h.deleteNow(namespacesGVR, "", name)
	})
	return name
}

// protectedCRD creates a namespaced CRD of its own group, labelled value,
// and waits until it is Established; when the test ends its label is
// removed and it is deleted. It returns the CRD and its objects' resource.
func (h *harness) protectedCRD(value string) (string, schema.GroupVersionResource) {
	h.T.Helper()
	group := fmt.Sprintf("dp-%s-%d.flotilla.dev", strings.ToLower(h.ID), h.crds.Add(1))
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	name := "widgets." + group
	crd.SetName(name)
	crd.SetLabels(h.labels(value))
	h.create(crdGVR, "", crd)
	h.T.Cleanup(func() {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, protect.Label)
		_, _ = h.dyn.Resource(crdGVR).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		_ = h.deleteNow(crdGVR, "", name)
	})
	testenv.Eventually(h.T, timeout, func() (bool, error) {
		got, err := h.dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	return name, gvr
}

func ptr(s string) *string { return &s }
