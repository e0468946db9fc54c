// Package deploy checks the layout of deploy/ that makes per-feature install and uninstall safe, from the
// rendered overlays alone (no cluster): `kubectl delete -k deploy/overlays/<feature>` deletes exactly what that
// overlay renders, so no feature overlay may render the namespace, a CRD, or anything another feature renders.
package deploy

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// features are the installable feature overlays; variants render a feature with another choice (the same objects,
// so they are never installed beside it).
var (
	features = []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob", "resourcedistribution", "containerrecreate", "imagepulljob", "uniteddeployment", "deletionprotection", "launchpriority", "workloadspread", "persistentpodstate"}
	variants = map[string]string{"sidecarset-ignore-failures": "sidecarset", "sidecarset-kruise-system": "sidecarset"}
	// shared overlays: installed once, never removed with a feature; local is make run's (no Deployments).
	shared = []string{"namespace", "crds", "all", "local"}
)

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func render(t *testing.T, root, name string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.RenderOverlay(root, name)
	require.NoError(t, err)
	require.NotEmpty(t, objs, "deploy/overlays/%s renders nothing", name)
	return objs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..", "..")
}

// Every overlay directory is classified, so a new one gets these checks too.
func TestEveryOverlayIsClassified(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot(t), "deploy", "overlays"))
	require.NoError(t, err)
	known := map[string]bool{}
	for _, n := range append(append([]string{}, features...), shared...) {
		known[n] = true
	}
	for v := range variants {
		known[v] = true
	}
	for _, e := range entries {
		assert.True(t, known[e.Name()], "deploy/overlays/%s is neither a feature, a variant nor a shared overlay", e.Name())
	}
}

func TestFeatureOverlaysOwnOnlyTheirObjects(t *testing.T) {
	root := repoRoot(t)
	owner := map[string]string{}
	var union []string
	for _, f := range features {
		for _, o := range render(t, root, f) {
			k := key(o)
			assert.NotEqual(t, "Namespace", o.GetKind(), "%s renders %s: uninstalling it would delete every feature's objects", f, k)
			assert.NotEqual(t, "CustomResourceDefinition", o.GetKind(), "%s renders %s: uninstalling it would delete every object of that kind", f, k)
			if prev, ok := owner[k]; ok {
				assert.Fail(t, "an object in two feature overlays", "%s is rendered by %s and %s: uninstalling one removes it from the other", k, prev, f)
			}
			owner[k] = f
			union = append(union, k)
		}
	}
	var all []string
	for _, o := range render(t, root, "all") {
		all = append(all, key(o))
	}
	sort.Strings(union)
	sort.Strings(all)
	assert.Equal(t, union, all, "deploy/overlays/all renders exactly the feature overlays together")

	for v, base := range variants {
		// Compared by kind and name: a variant may move an object to another namespace
		// (sidecarset-kruise-system's revisions Role and RoleBinding).
		var got, want []string
		for _, o := range render(t, root, v) {
			got = append(got, o.GetKind()+" "+o.GetName())
		}
		for _, o := range render(t, root, base) {
			want = append(want, o.GetKind()+" "+o.GetName())
		}
		sort.Strings(got)
		sort.Strings(want)
		assert.Equal(t, want, got, "%s renders the objects of %s (a choice, not an addition)", v, base)
	}
}

// Each feature's webhook configurations are in its own overlay, so they go when it is uninstalled.
func TestWebhookConfigurationsGoWithTheirFeature(t *testing.T) {
	root := repoRoot(t)
	for _, f := range features {
		for _, o := range render(t, root, f) {
			if o.GetKind() == "ValidatingWebhookConfiguration" || o.GetKind() == "MutatingWebhookConfiguration" {
				// "flotilla-z-<feature>": a pod webhook that must run after the others (the API server calls
				// mutating configurations in name order; launchpriority after SidecarSet injection, as OpenKruise).
				want := "flotilla-" + f
				if o.GetKind() == "MutatingWebhookConfiguration" && o.GetName() == "flotilla-z-"+f {
					want = o.GetName()
				}
				assert.Equal(t, want, o.GetName(), "%s renders the webhook configuration %s", f, key(o))
			}
		}
	}
}

func TestSharedOverlays(t *testing.T) {
	root := repoRoot(t)
	var namespaces []string
	for _, o := range render(t, root, "namespace") {
		namespaces = append(namespaces, o.GetKind()+" "+o.GetName())
	}
	assert.ElementsMatch(t, []string{"Namespace flotilla-system", "Namespace flotilla-node"}, namespaces)
	crds := render(t, root, "crds")
	for _, o := range crds {
		assert.Equal(t, "CustomResourceDefinition", o.GetKind(), "deploy/overlays/crds renders %s", key(o))
	}
	assert.Len(t, crds, 16, "one CRD per kind served")
}

// Pod Security: the controllers' namespace is "restricted" and enforced; the node agent, which needs the host's
// network and CRI socket ("privileged"), runs in a namespace of its own. Every namespace an overlay puts objects in
// is one the namespace overlay installs.
func TestPodSecurityLabels(t *testing.T) {
	root := repoRoot(t)
	want := map[string]string{"flotilla-system": "restricted", "flotilla-node": "privileged"}
	got := map[string]string{}
	for _, o := range render(t, root, "namespace") {
		require.Equal(t, "Namespace", o.GetKind())
		got[o.GetName()] = o.GetLabels()["pod-security.kubernetes.io/enforce"]
	}
	assert.Equal(t, want, got)
	for _, o := range render(t, root, "all") {
		if ns := o.GetNamespace(); ns != "" && !isClusterScoped(o.GetKind()) {
			assert.Contains(t, want, ns, "%s is in a namespace the namespace overlay does not install", key(o))
		}
		switch o.GetKind() {
		case "DaemonSet":
			assert.Equal(t, "flotilla-node", o.GetNamespace(), "%s: node agents run in flotilla-node", key(o))
		case "Deployment":
			assert.Equal(t, "flotilla-system", o.GetNamespace(), "%s: controllers run in flotilla-system", key(o))
		}
	}
}

// kustomize (kubectl's) does not know every cluster-scoped kind and gives them the overlay's namespace, which the
// API server ignores.
func isClusterScoped(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CustomResourceDefinition", "Namespace":
		return true
	}
	return false
}

// The FlowSchema that lifts Flotilla's controllers to workload-high must not match the node agents: one per node,
// they would crowd the controllers out of it.
func TestFlowSchemaLeavesNodeAgentsOut(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "extras", "flowschema.yaml"))
	require.NoError(t, err)
	var fs struct {
		Spec struct {
			PriorityLevelConfiguration struct{ Name string } `json:"priorityLevelConfiguration"`
			Rules                      []struct {
				Subjects []struct {
					Kind           string
					ServiceAccount *struct{ Namespace, Name string } `json:"serviceAccount"`
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &fs))
	require.Equal(t, "workload-high", fs.Spec.PriorityLevelConfiguration.Name)
	matches := func(ns, name string) bool {
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				if s.Kind != "ServiceAccount" || s.ServiceAccount == nil {
					require.Failf(t, "unexpected subject", "%+v: only ServiceAccount subjects are checked here", s)
				}
				if s.ServiceAccount.Namespace == ns && (s.ServiceAccount.Name == "*" || s.ServiceAccount.Name == name) {
					return true
				}
			}
		}
		return false
	}
	var agents, controllers int
	for _, o := range render(t, root, "all") {
		if o.GetKind() != "ServiceAccount" {
			continue
		}
		if o.GetName() == "probe-agent" {
			agents++
			assert.False(t, matches(o.GetNamespace(), o.GetName()), "the FlowSchema puts the node agent %s into workload-high", key(o))
		} else {
			controllers++
			assert.True(t, matches(o.GetNamespace(), o.GetName()), "the FlowSchema leaves the controller %s out", key(o))
		}
	}
	assert.Equal(t, 1, agents)
	assert.Equal(t, len(features), controllers)
}

// The takeover variant (issue 23): sidecarset-controller reads and writes SidecarSet revisions and the
// kruise-configuration whitelist in kruise-system, and its RBAC for them is granted there (and only there),
// to the ServiceAccount in flotilla-system.
func TestSidecarSetKruiseSystemVariant(t *testing.T) {
	objs := render(t, repoRoot(t), "sidecarset-kruise-system")
	var args []string
	found := map[string]string{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "sidecarset-controller":
			cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			require.NoError(t, err)
			a, _, err := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
			require.NoError(t, err)
			args = a
			assert.Equal(t, "flotilla-system", o.GetNamespace())
		case o.GetName() == "flotilla:sidecarset-controller:revisions":
			found[o.GetKind()] = o.GetNamespace()
			if o.GetKind() == "RoleBinding" {
				subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
				require.NoError(t, err)
				assert.Equal(t, "flotilla-system", subjects[0].(map[string]any)["namespace"])
			}
		}
	}
	assert.Contains(t, args, "--revision-namespace=kruise-system")
	assert.Equal(t, map[string]string{"Role": "kruise-system", "RoleBinding": "kruise-system"}, found)
}
