package gen

import (
	"strings"
	"testing"
)

// TestVariantEdits: a variant overlay may move objects into the example namespace and append args naming it; any
// other difference fails the generation (the chart could not express it as the value).
func TestVariantEdits(t *testing.T) {
	v := Variant{Feature: "sidecarset", Value: "revisionNamespace", Overlay: "sidecarset-kruise-system", Example: "kruise-system"}
	role := func(ns string) map[string]any {
		return map[string]any{"kind": "Role", "metadata": map[string]any{"name": "r", "namespace": ns}}
	}
	dep := func(args ...any) map[string]any {
		return map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "flotilla-system"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"args": args}}}}}}
	}
	base := []map[string]any{role("flotilla-system"), dep("--a")}
	for name, tc := range map[string]struct {
		variant []map[string]any
		wantErr string
		check   func(t *testing.T, e map[int][]variantEdit)
	}{
		"namespace and arg": {variant: []map[string]any{dep("--a", "--revision-namespace=kruise-system"), role("kruise-system")},
			check: func(t *testing.T, e map[int][]variantEdit) {
				if len(e[0]) != 1 || e[0][0].namespace != "flotilla-system" || e[0][0].args != nil {
					t.Errorf("Role edit %+v", e[0])
				}
				if len(e[1]) != 1 || e[1][0].namespace != "" || len(e[1][0].args) != 1 || e[1][0].args[0] != "--revision-namespace=kruise-system" {
					t.Errorf("Deployment edit %+v", e[1])
				}
			}},
		"no difference":       {variant: []map[string]any{role("flotilla-system"), dep("--a")}, wantErr: "would change nothing"},
		"other namespace":     {variant: []map[string]any{role("elsewhere"), dep("--a")}, wantErr: `may only move objects to "kruise-system"`},
		"arg without example": {variant: []map[string]any{role("flotilla-system"), dep("--a", "--b")}, wantErr: `"--b" does not name`},
		"changed arg":         {variant: []map[string]any{role("flotilla-system"), dep("--a=kruise-system")}, wantErr: "beyond its namespace"},
		"object added":        {variant: []map[string]any{role("flotilla-system"), dep("--a"), role("x")}, wantErr: "may only change objects"},
		"object renamed":      {variant: []map[string]any{{"kind": "Role", "metadata": map[string]any{"name": "s", "namespace": "kruise-system"}}, dep("--a")}, wantErr: "has no Role r"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := variantEdits(v, base, tc.variant)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, e)
		})
	}
}

// TestVariantApply: the edits become the value's template expressions (namespace defaulting to the base's; the arg
// present only when the value is set, before the values' args).
func TestVariantApply(t *testing.T) {
	v := Variant{Feature: "sidecarset", Value: "revisionNamespace", Example: "kruise-system"}
	d := &doc{obj: map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "flotilla-system"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"args": []any{"--a"}}}}}}}}
	c, _ := container(d.obj)
	c["args"] = append(c["args"].([]any), d.Line(func(int) string { return "VALUES ARGS\n" }))
	for _, e := range []variantEdit{{v: v, namespace: "flotilla-system"}, {v: v, args: []string{"--revision-namespace=kruise-system"}}} {
		if err := e.apply(d); err != nil {
			t.Fatal(err)
		}
	}
	out, err := d.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"  namespace: {{ $.Values.sidecarset.revisionNamespace | default \"flotilla-system\" }}\n",
		"        - --a\n{{- with $.Values.sidecarset.revisionNamespace }}\n        - {{ printf \"--revision-namespace=%s\" . | quote }}\n{{- end }}\nVALUES ARGS\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("rendered:\n%s\nwant %q", out, w)
		}
	}
}
