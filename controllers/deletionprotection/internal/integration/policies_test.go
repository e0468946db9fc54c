package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/controllers/deletionprotection/internal/protect"
)

const (
	alwaysMsg = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"
	cascMsg   = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading"
)

// TestPolicyWorkloads: every workload kind OpenKruise protects, through the
// component's policies: Always refuses; Cascading refuses while
// spec.replicas > 0 (the message names the label and the replicas) and
// allows at 0; without the label the deletion goes through.
func TestPolicyWorkloads(t *testing.T) {
	h := newHarness(t)
	h.installPolicies()
	for _, k := range workloadKinds {
		t.Run(k.kind+"."+k.gvr.GroupVersion().String(), func(t *testing.T) {
			h := h.sub(t)
			name := strings.ToLower(k.kind) + "-" + strings.ReplaceAll(k.gvr.Version, ".", "")
			_, err := h.dyn.Resource(k.gvr).Namespace(h.NS).Create(context.Background(),
				object(k.apiVersion, k.kind, name, h.labels(protect.Always), k.spec(name, 2)), metav1.CreateOptions{})
			if (apierrors.IsNotFound(err) || meta.IsNoMatchError(err)) && k.kind == "UnitedDeployment" {
				t.Skipf("UnitedDeployment is not served on this cluster (no CRD yet): %v", err)
			}
			require.NoError(t, err)

			h.requireRefused(t, h.deleteNow(k.gvr, h.NS, name), alwaysMsg)
			h.setLabel(k.gvr, h.NS, name, ptr(protect.Cascading))
			h.requireRefused(t, h.deleteNow(k.gvr, h.NS, name), cascMsg+" and replicas 2>0")
			h.setLabel(k.gvr, h.NS, name, nil)
			h.requireAllowed(t, h.deleteDryRun(k.gvr, h.NS, name), "unlabelled: deleted")

			h.setLabel(k.gvr, h.NS, name, ptr(protect.Cascading))
			_, err = h.dyn.Resource(k.gvr).Namespace(h.NS).Patch(context.Background(), name, types.MergePatchType,
				[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			h.requireAllowed(t, h.deleteNow(k.gvr, h.NS, name), "Cascading with 0 replicas: deleted")
		})
	}
}

// TestPolicyServiceIngress: Services and Ingresses have only Always (as in
// OpenKruise): Cascading deletes them.
func TestPolicyServiceIngress(t *testing.T) {
	h := newHarness(t)
	h.installPolicies()
	for _, c := range []struct {
		kind string
		make func(string, map[string]string) *unstructured.Unstructured
	}{{"service", service}, {"ingress", ingress}} {
		gvr := servicesGVR
		if c.kind == "ingress" {
			gvr = ingressesGVR
		}
		always := h.create(gvr, h.NS, c.make(c.kind+"-always", h.labels(protect.Always))).GetName()
		h.requireRefused(t, h.deleteNow(gvr, h.NS, always), alwaysMsg)
		h.setLabel(gvr, h.NS, always, nil)
		h.requireAllowed(t, h.deleteNow(gvr, h.NS, always), c.kind+": label removed, deleted")

		cascading := h.create(gvr, h.NS, c.make(c.kind+"-cascading", h.labels(protect.Cascading))).GetName()
		h.requireAllowed(t, h.deleteNow(gvr, h.NS, cascading), c.kind+": Cascading does not protect it")
	}
}

// TestPolicyNamespaceAndCRDAlways: Always on a Namespace and on a CRD is
// the policy's (the webhook is not even installed here); removing the label
// releases them.
func TestPolicyNamespaceAndCRDAlways(t *testing.T) {
	h := newHarness(t)
	h.installPolicies()

	ns := h.protectedNamespace(protect.Always)
	h.requireRefused(t, h.deleteNow(namespacesGVR, "", ns), alwaysMsg)
	h.setLabel(namespacesGVR, "", ns, nil)
	h.requireAllowed(t, h.deleteNow(namespacesGVR, "", ns), "namespace: label removed, deleted")

	crd, _ := h.protectedCRD(protect.Always)
	h.requireRefused(t, h.deleteNow(crdGVR, "", crd), alwaysMsg)
	h.setLabel(crdGVR, "", crd, nil)
	h.requireAllowed(t, h.deleteNow(crdGVR, "", crd), "CRD: label removed, deleted")
}
