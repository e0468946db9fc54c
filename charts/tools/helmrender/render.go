// Package helmrender renders charts/flotilla with Helm's Go library, as `helm template` does (client-only dry run
// of an install), for the tests of the chart.
package helmrender

import (
	"fmt"
	"sort"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/flotilla-dev/flotilla/charts/tools/gen"
)

// Release is the release name the tests render and install with.
const Release = "flotilla"

// Render renders the chart in dir with vals over its defaults and returns its objects.
func Render(dir string, vals map[string]any) ([]map[string]any, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = Release
	install.Namespace = "default"
	install.IncludeCRDs = true
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", dir, err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("render chart %s: unexpected release type %T", dir, rel)
	}
	return gen.SplitYAML([]byte(r.Manifest))
}

// Key names an object: kind, namespace and name.
func Key(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	return fmt.Sprintf("%v %s/%v", obj["kind"], ns, md["name"])
}

// ByKey indexes objects by Key; a duplicate is an error.
func ByKey(objs []map[string]any) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, o := range objs {
		k := Key(o)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("two objects %s", k)
		}
		out[k] = o
	}
	return out, nil
}

// Keys are the sorted keys of an index.
func Keys(m map[string]map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Only are values enabling the given features and nothing shared (namespace and CRDs off), merged with extra.
func Only(features []string, extra map[string]any) map[string]any {
	v := map[string]any{
		"crds":         map[string]any{"managed": false},
		"installation": map[string]any{"createNamespace": false},
	}
	for _, f := range gen.Features {
		on := false
		for _, g := range features {
			on = on || g == f
		}
		v[f] = map[string]any{"enabled": on}
	}
	for k, x := range extra {
		v[k] = Merge(v[k], x)
	}
	return v
}

// Merge merges b over a, maps key by key (as Helm merges values).
func Merge(a, b any) any {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return b
	}
	out := map[string]any{}
	for k, v := range am {
		out[k] = v
	}
	for k, v := range bm {
		out[k] = Merge(out[k], v)
	}
	return out
}
