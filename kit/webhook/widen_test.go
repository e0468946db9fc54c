package webhook

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDisjuncts(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`a`, []string{"a"}},
		{`(a) || (b && c)`, []string{"a", "b && c"}},
		{`a || b && c`, []string{"a", "b && c"}},
		{`((a || b))`, []string{"a || b"}}, // one term: its || is inside parentheses
		{`f(a || b) || x["||"] || 'y)||('`, []string{"f(a || b)", `x["||"]`, `'y)||('`}},
		{`a || b ? c : d`, []string{"a || b ? c : d"}},
		{`(a) && (b)`, []string{"(a) && (b)"}},
		{`"a\"||" || b`, []string{`"a\"||"`, "b"}},
	} {
		assert.Equal(t, tc.want, Disjuncts(tc.expr), tc.expr)
	}
}

// Widen never narrows: the result holds wherever either input holds (CEL
// evaluation over a grid of namespaces), keeps the current expression when
// it already covers, and takes the leader's canonical form when that
// covers the current one.
func TestWiden(t *testing.T) {
	a, b, c := NamespaceIn("a"), NamespaceIn("b"), NamespaceIn("c")
	for _, tc := range []struct {
		name, cur, want, out string
	}{
		{"shipped false: take the computed scope", Never, AnyOf(a, b), AnyOf(a, b)},
		{"already covered", AnyOf(a, b, c), AnyOf(a, b), AnyOf(a, b, c)},
		{"computed covers: canonical", a, AnyOf(a, b), AnyOf(a, b)},
		{"neither covers: union", AnyOf(a, c), AnyOf(a, b), AnyOf(a, b, c)},
		{"computed empty: unchanged", a, Never, a},
		{"current true: unchanged", Always, a, Always},
		{"computed true", a, Always, Always},
		{"foreign single term", "request.namespace != 'x'", a, AnyOf("request.namespace != 'x'", a)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Widen(tc.cur, tc.want)
			assert.Equal(t, tc.out, got)
			for _, ns := range []string{"a", "b", "c", "x", "d"} {
				cur, want := evalCEL(t, tc.cur, podObj(nil), ns), evalCEL(t, tc.want, podObj(nil), ns)
				if cur || want {
					assert.True(t, evalCEL(t, got, podObj(nil), ns), "widened %q loses namespace %s", got, ns)
				}
			}
		})
	}
	long := make([]string, 0, 4000)
	for i := range 4000 {
		long = append(long, NamespaceIn(fmt.Sprintf("namespace-%05d", i)))
	}
	assert.Equal(t, Always, Widen(AnyOf(long[:2000]...), AnyOf(long[2000:]...)), "beyond MaxWidenedLen: true, never narrower")
}

// A non-leader replica widens: it adds what it computed to the entry's
// conditions and never removes what is there; a condition missing from an
// entry that is called (missing means true) is not added, one missing from
// an entry the shipped "false" keeps silent is.
func TestWidenScope(t *testing.T) {
	m, v := configs()
	client := fake.NewClientset(m, v)
	scope := Scope{MatchConditions: []admissionregistrationv1.MatchCondition{
		{Name: "flotilla-scope", Expression: NamespaceIn("a")},
		{Name: "flotilla-extra", Expression: "has(object.metadata.labels)"},
	}}
	s := NewScopeSyncer(client, ConfigRef{Kind: Mutating, Name: "flotilla-x"}, "pods.x.flotilla.dev", func() (Scope, error) { return scope, nil })
	assert.Equal(t, "webhook-scope-widen-pods.x.flotilla.dev", s.ReplicaComponent().Name)
	get := func() []admissionregistrationv1.MatchCondition {
		got, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "flotilla-x", metav1.GetOptions{})
		require.NoError(t, err)
		return got.Webhooks[0].MatchConditions
	}
	require.NoError(t, s.Widen(context.Background()))
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
		{Name: "flotilla-scope", Expression: NamespaceIn("a")},
		{Name: "flotilla-extra", Expression: "has(object.metadata.labels)"},
	}, get(), "from the shipped false: the computed scope")

	// The leader has seen a budget in b that this replica has not: the union.
	leader := NewScopeSyncer(client, s.Ref, s.Webhook, func() (Scope, error) {
		return Scope{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "flotilla-scope", Expression: NamespaceIn("b")}}}, nil
	})
	require.NoError(t, leader.Sync(context.Background()))
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
		{Name: "flotilla-scope", Expression: NamespaceIn("b")},
	}, get(), "the leader narrows")
	require.NoError(t, s.Widen(context.Background()))
	assert.Equal(t, []admissionregistrationv1.MatchCondition{
		{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
		{Name: "flotilla-scope", Expression: AnyOf(NamespaceIn("a"), NamespaceIn("b"))},
	}, get(), "widened to both; flotilla-extra not added: missing is wider")

	client.ClearActions()
	require.NoError(t, s.Widen(context.Background()))
	for _, a := range client.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "already covered: no write")
	}
}
