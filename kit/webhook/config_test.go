package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func configs() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-x"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "pods.x.flotilla.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/p")},
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
					{Name: "flotilla-scope", Expression: Never},
				}},
			{Name: "other.x.flotilla.dev"},
		},
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-x"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "objs.x.flotilla.dev"}},
	}
	return m, v
}

// The CA bundle lands in every entry of the binary's configurations, and a
// configuration already right is not written again.
func TestCABundleInjector(t *testing.T) {
	m, v := configs()
	client := fake.NewClientset(m, v)
	bundle := []byte("PEM")
	inj := NewCABundleInjector(client, func() []byte { return bundle },
		ConfigRef{Kind: Mutating, Name: "flotilla-x"}, ConfigRef{Kind: Validating, Name: "flotilla-x"})
	require.NoError(t, inj.Sync(context.Background()))
	gm, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
	gv, _ := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
	for _, w := range gm.Webhooks {
		assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
	}
	assert.Equal(t, bundle, gv.Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, "https://127.0.0.1:9443/p", *gm.Webhooks[0].ClientConfig.URL, "the endpoint is the manifests'")

	client.ClearActions()
	require.NoError(t, inj.Sync(context.Background()))
	for _, a := range client.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "nothing to write")
	}
	// A replica re-reads the certificates first: it writes the bundle another
	// replica renewed, not its stale copy.
	bundle = []byte("OLD")
	inj.Refresh = func(context.Context) error { bundle = []byte("NEW"); return nil }
	require.NoError(t, inj.Sync(context.Background()))
	gm, _ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
	assert.Equal(t, []byte("NEW"), gm.Webhooks[0].ClientConfig.CABundle)
	inj.Refresh = func(context.Context) error { return errors.New("secret unreadable") }
	require.ErrorContains(t, inj.Sync(context.Background()), "secret unreadable", "nothing written from a copy that may be stale")
	inj.Refresh = nil

	// No bundle known yet (external certificates without ca.crt): untouched.
	inj.Bundle = func() []byte { return nil }
	client.ClearActions()
	require.NoError(t, inj.Sync(context.Background()))
	assert.Empty(t, client.Actions())

	// A configuration that is not installed is an error (retried).
	inj = NewCABundleInjector(fake.NewClientset(), func() []byte { return bundle }, ConfigRef{Kind: Mutating, Name: "missing"})
	err := inj.Sync(context.Background())
	require.Error(t, err)
	assert.True(t, IsNotFound(err))
}

// The scope replaces the conditions the controller owns (flotilla-*) and
// keeps the manifests' own; selectors are set only when given.
func TestScopeSyncer(t *testing.T) {
	m, v := configs()
	client := fake.NewClientset(m, v)
	scope := Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "flotilla-selectors", Expression: "request.namespace == 'a'"}}}
	s := NewScopeSyncer(client, ConfigRef{Kind: Mutating, Name: "flotilla-x"}, "pods.x.flotilla.dev", func() (Scope, error) { return scope, nil })
	require.NoError(t, s.Sync(context.Background()))
	got, _ := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
		{Name: "flotilla-selectors", Expression: "request.namespace == 'a'"},
	}, got.Webhooks[0].MatchConditions, "the stale flotilla-scope went, the manifests' condition stayed")
	assert.Empty(t, got.Webhooks[1].MatchConditions, "other entries untouched")
	assert.Nil(t, got.Webhooks[0].NamespaceSelector)

	scope.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	require.NoError(t, s.Sync(context.Background()))
	got, _ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
	assert.Equal(t, scope.NamespaceSelector, got.Webhooks[0].NamespaceSelector)

	client.ClearActions()
	require.NoError(t, s.Sync(context.Background()))
	for _, a := range client.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "unchanged scope: no write")
	}
	assert.Equal(t, "webhook-scope-pods.x.flotilla.dev", s.Name())
}

// evalCEL evaluates expr the way the API server evaluates a match
// condition: object and request as dynamic values.
func evalCEL(t *testing.T, expr string, object map[string]any, namespace string) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType), cel.Variable("request", cel.DynType))
	require.NoError(t, err)
	ast, iss := env.Compile(expr)
	require.NoError(t, iss.Err(), expr)
	require.Equal(t, cel.BoolType, ast.OutputType(), expr)
	prg, err := env.Program(ast)
	require.NoError(t, err)
	out, _, err := prg.Eval(map[string]any{"object": object, "oldObject": nil, "request": map[string]any{"namespace": namespace}})
	require.NoError(t, err, "a match condition must never fail to evaluate: %s", expr)
	return out.Value().(bool)
}

func podObj(labels map[string]any) map[string]any {
	meta := map[string]any{"name": "p"}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{"metadata": meta}
}

func TestLabelsMatchCEL(t *testing.T) {
	sel := &metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web", "tier": "front"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "stage"}},
			{Key: "canary", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}},
			{Key: "example.com/owner", Operator: metav1.LabelSelectorOpExists},
			{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist},
		},
	}
	expr, err := LabelsMatch("object", sel)
	require.NoError(t, err)
	base := func() map[string]any {
		return map[string]any{"app": "web", "tier": "front", "env": "prod", "example.com/owner": "me"}
	}
	cases := []struct {
		name   string
		mutate func(map[string]any)
		want   bool
	}{
		{"all match", func(map[string]any) {}, true},
		{"matchLabels differ", func(l map[string]any) { l["app"] = "db" }, false},
		{"matchLabels missing", func(l map[string]any) { delete(l, "tier") }, false},
		{"In other value", func(l map[string]any) { l["env"] = "dev" }, false},
		{"NotIn value present", func(l map[string]any) { l["canary"] = "true" }, false},
		{"NotIn other value", func(l map[string]any) { l["canary"] = "false" }, true},
		{"Exists missing", func(l map[string]any) { delete(l, "example.com/owner") }, false},
		{"DoesNotExist present", func(l map[string]any) { l["skip"] = "" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := base()
			c.mutate(l)
			assert.Equal(t, c.want, evalCEL(t, expr, podObj(l), "ns"))
		})
	}
	assert.False(t, evalCEL(t, expr, podObj(nil), "ns"), "a pod without labels: no error, no match")

	onlyNeg, err := LabelsMatch("object", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}})
	require.NoError(t, err)
	assert.True(t, evalCEL(t, onlyNeg, podObj(nil), "ns"), "DoesNotExist matches a pod without labels")

	all, _ := LabelsMatch("object", &metav1.LabelSelector{})
	assert.Equal(t, Always, all)
	none, _ := LabelsMatch("object", nil)
	assert.Equal(t, Never, none)
	_, err = LabelsMatch("object", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Gt"}}})
	assert.Error(t, err)

	// Quotes in values cannot break out of the literal.
	tricky, _ := LabelsMatch("object", &metav1.LabelSelector{MatchLabels: map[string]string{"a": `x" || true || "`}})
	assert.False(t, evalCEL(t, tricky, podObj(map[string]any{"a": "y"}), "ns"))
}

func TestHasAnnotation(t *testing.T) {
	expr := HasAnnotation("object", "kruise.io/related-pub")
	withAnn := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kruise.io/related-pub": "pub-a"}}}
	assert.True(t, evalCEL(t, expr, withAnn, "ns"))
	assert.False(t, evalCEL(t, expr, podObj(map[string]any{"kruise.io/related-pub": "x"}), "ns"), "a label is not an annotation")
	assert.False(t, evalCEL(t, expr, podObj(nil), "ns"))
}

func TestCombinators(t *testing.T) {
	assert.Equal(t, Never, AnyOf())
	assert.Equal(t, Never, AnyOf(Never, Never))
	assert.Equal(t, Always, AnyOf("a", Always))
	assert.Equal(t, "(a) || (b)", AnyOf("b", "a", "b"))
	assert.Equal(t, Always, AllOf())
	assert.Equal(t, Never, AllOf("a", Never))
	assert.Equal(t, "(a) && (b)", AllOf("a", Always, "b"))
	assert.Equal(t, Never, NamespaceIn())

	expr := AnyOf(AllOf(NamespaceIn("a"), `has(object.metadata.labels) && "x" in object.metadata.labels`), AllOf(NamespaceIn("b", "c")))
	assert.True(t, evalCEL(t, expr, podObj(map[string]any{"x": "1"}), "a"))
	assert.False(t, evalCEL(t, expr, podObj(nil), "a"))
	assert.True(t, evalCEL(t, expr, podObj(nil), "c"))
	assert.False(t, evalCEL(t, expr, podObj(nil), "d"))
	assert.False(t, evalCEL(t, Never, podObj(nil), "d"))
}
