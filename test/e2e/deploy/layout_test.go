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

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// features are the installable feature overlays; variants render a feature with another choice (the same objects,
// so they are never installed beside it).
var (
	features = []string{"cloneset", "statefulset", "daemonset", "sidecarset", "pub", "probe", "cronjob"}
	variants = map[string]string{"sidecarset-ignore-failures": "sidecarset"}
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
		var got, want []string
		for _, o := range render(t, root, v) {
			got = append(got, key(o))
		}
		for k, f := range owner {
			if f == base {
				want = append(want, k)
			}
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
				assert.Equal(t, "flotilla-"+f, o.GetName(), "%s renders the webhook configuration %s", f, key(o))
			}
		}
	}
}

func TestSharedOverlays(t *testing.T) {
	root := repoRoot(t)
	for _, o := range render(t, root, "namespace") {
		assert.Equal(t, "Namespace flotilla-system", o.GetKind()+" "+o.GetName())
	}
	crds := render(t, root, "crds")
	for _, o := range crds {
		assert.Equal(t, "CustomResourceDefinition", o.GetKind(), "deploy/overlays/crds renders %s", key(o))
	}
	assert.Len(t, crds, 10, "one CRD per kind served")
}
