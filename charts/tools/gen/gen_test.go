package gen

import (
	"strings"
	"testing"
)

// TestConversionAnnotations: a CRD converted by a webhook takes the webhook configurations' annotations (cert-manager's
// CA injection), next to its own; a CRD without one is left as it is.
func TestConversionAnnotations(t *testing.T) {
	crd := func(conversion map[string]any) map[string]any {
		spec := map[string]any{"group": "apps.kruise.io"}
		if conversion != nil {
			spec["conversion"] = conversion
		}
		return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "daemonsets.apps.kruise.io", "annotations": map[string]any{"controller-gen.kubebuilder.io/version": "v0.23.0"}},
			"spec":     spec}
	}
	webhook := map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{
		"service": map[string]any{"name": "daemonset-controller-webhook", "namespace": "flotilla-system", "port": 19445}}}}
	d := &doc{obj: crd(webhook)}
	if err := conversionAnnotations(d); err != nil {
		t.Fatal(err)
	}
	out, err := d.render()
	if err != nil {
		t.Fatal(err)
	}
	want := "  annotations:\n    controller-gen.kubebuilder.io/version: v0.23.0\n" +
		"{{- with (include \"flotilla.webhookAnnotations\" (dict \"root\" $ \"binary\" \"daemonset-controller\")) }}{{ . | nindent 4 }}{{- end }}\n"
	if !strings.Contains(out, want) {
		t.Errorf("rendered:\n%s\nwant it to contain:\n%s", out, want)
	}

	// A conversion Service of its own (issue 23): the binary's certificates all the same.
	d = &doc{obj: crd(map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{
		"service": map[string]any{"name": "sidecarset-controller-conversion", "namespace": "flotilla-system", "port": 19443}}}})}
	if err := conversionAnnotations(d); err != nil {
		t.Fatal(err)
	}
	if out, err = d.render(); err != nil || !strings.Contains(out, `"binary" "sidecarset-controller"`) {
		t.Errorf("conversion Service sidecarset-controller-conversion: err %v, rendered:\n%s", err, out)
	}

	d = &doc{obj: crd(map[string]any{"strategy": "None"})}
	if err := conversionAnnotations(d); err != nil || len(d.tokens) != 0 {
		t.Errorf("no webhook conversion: tokens %d, err %v", len(d.tokens), err)
	}
	d = &doc{obj: crd(map[string]any{"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{"service": map[string]any{"name": "other"}}}})}
	if err := conversionAnnotations(d); err == nil {
		t.Error("a conversion Service not named <binary>-webhook: want an error")
	}
}

// TestTokens: each kind of token becomes its text where the object had it.
func TestTokens(t *testing.T) {
	d := &doc{obj: map[string]any{"kind": "X", "metadata": map[string]any{"name": "x"}}}
	obj := d.obj
	obj["spec"] = map[string]any{
		"replicas":  d.Inline("{{ R }}"),
		"args":      []any{"--port=:" + d.Inline("{{ P }}"), d.Line(func(i int) string { return "LIST " + pad(i) + "|\n" })},
		"resources": d.Value(func(i int) string { return "{{ V " + pad(i) + "}}" }),
	}
	obj["spec"].(map[string]any)[d.Line(func(i int) string { return "KEY " + pad(i) + "|\n" })] = nil
	out, err := d.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"  args:\n  - --port=:{{ P }}\nLIST   |\n", "  replicas: {{ R }}\n", "  resources:{{ V   }}\n", "KEY   |\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("rendered:\n%s\nwant %q", out, w)
		}
	}
	if strings.Index(out, "KEY") < strings.Index(out, "resources") {
		t.Errorf("a key token sorts after the real keys:\n%s", out)
	}
}
